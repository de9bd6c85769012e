package projections

import (
	"cmp"
	"fmt"

	"go.etcd.io/bbolt"
)

// Overview names the open conversations (of the 200 latest) that are
// running, that have messages queued (with how many), and that wait for
// the owner: "agent: title".
func Overview(db *bbolt.DB) (running, queued, waiting []string, err error) {
	convs, err := ListConversations(db, 200)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, c := range convs {
		name := c.Agent + ": " + cmp.Or(c.Title, c.ID)
		switch c.Status {
		case ConversationAwaitingApproval:
			waiting = append(waiting, name)
		case ConversationAwaitingAnswer:
			waiting = append(waiting, name+" (asks: "+truncate(oneLine(c.PendingQuestion.Question), 60)+")")
		case "running":
			running = append(running, name)
		}
		if c.Queued > 0 {
			queued = append(queued, fmt.Sprintf("%s (%d)", name, c.Queued))
		}
	}
	return running, queued, waiting, nil
}
