package loop

import (
	"context"
	"encoding/json"
)

// History is conversation id's messages as the model sees them, as JSON:
// the history of the web's GET /api/conversations/{id} (web.Histories),
// which reads no loop type. An event of its log that cannot be decoded is
// Get's *events.DecodeError.
func (cs *Convs) History(ctx context.Context, id string) (json.RawMessage, error) {
	c, err := cs.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	var msgs []Message
	c.View(func(st *State) { msgs = append([]Message{}, st.Messages...) })
	return json.Marshal(msgs)
}
