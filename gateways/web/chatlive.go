package web

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/a-h/templ"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/ui"
)

// ChatPatch is the chat page's live delta (GET /c/{id}/live, SSE event
// "chat"): after a stored event of the conversation, the items whose look
// changed and, when they changed, the parts around them. The page patches
// those elements and re-renders nothing else.
type ChatPatch struct {
	// Seq is the stored event's stream sequence; Type its type (the page
	// drops its live copy of a reply the chat now holds).
	Seq  uint64 `json:"seq"`
	Type string `json:"type"`
	// Slots are the changed items, each the HTML of its element
	// (data-slot) or "" when it shows nothing any more.
	Slots []SlotHTML `json:"slots,omitempty"`
	// Dropped and Tail are the HTML of #chat-dropped and #chat-tail,
	// absent when unchanged.
	Dropped *string `json:"dropped,omitempty"`
	Tail    *string `json:"tail,omitempty"`
	// Status, StatusLabel and Active are the chat's attributes.
	Status      string `json:"status"`
	StatusLabel string `json:"status_label"`
	Active      bool   `json:"active"`
}

// SlotHTML is one item's element.
type SlotHTML struct {
	Slot int    `json:"slot"`
	HTML string `json:"html"`
}

// chatSent is what a live feed has sent the page: each item's key and
// the parts around them, so the next patch holds only what changed.
// Until known, the feed does not know what the page holds around the
// items, so its first patch carries both parts whatever they are: an
// empty tail is news to a page still showing "working…".
type chatSent struct {
	keys          map[int]string
	dropped, tail string
	known         bool
}

// chatKey is what item i's look depends on: the item and whether the
// approval bar or the question box shows its call.
func chatKey(h projections.ChatHead, it projections.ChatItem) string {
	b, _ := json.Marshal(it)
	key := string(b)
	if it.Call != nil {
		if len(h.Approvals) > 0 && h.Approvals[0].CallID == it.Call.ID {
			key += "|waiting"
		}
		if len(h.Questions) > 0 && h.Questions[0].CallID == it.Call.ID {
			key += "|asking"
		}
		if h.Parent != "" {
			key += "|child"
		}
	}
	return key
}

// patch is the chat of conversation id now, against what sent holds;
// sent is updated.
func (p *Pages) patch(ctx context.Context, id, csrf string, sent *chatSent) (ChatPatch, error) {
	v, _, head, items, err := p.chat(ctx, id, csrf, func(string) string { return "" })
	if err != nil {
		return ChatPatch{}, err
	}
	out := ChatPatch{Seq: v.LastSeq, Status: v.Conv.Status, StatusLabel: ui.StatusLabel(v.Conv.Status), Active: v.Active}
	md := p.render()
	for i, it := range items {
		key := chatKey(head, it)
		if sent.keys[i] == key {
			continue
		}
		sent.keys[i] = key
		html := ""
		if item, ok := chatSlot(head, i, it, md); ok {
			if item.Delegate != nil {
				item.Delegate.AgentName = p.agentName(item.Delegate.Agent)
			}
			if html, err = renderHTML(ctx, ui.ChatSlot(item)); err != nil {
				return ChatPatch{}, err
			}
		}
		out.Slots = append(out.Slots, SlotHTML{Slot: i + 1, HTML: html})
	}
	dropped, err := renderHTML(ctx, ui.ChatDropped(v))
	if err != nil {
		return ChatPatch{}, err
	}
	if !sent.known || dropped != sent.dropped {
		sent.dropped, out.Dropped = dropped, &dropped
	}
	// The countdowns tick in the page: a tail that differs only in them
	// is not sent again (its approval bar's form stays the one in use).
	still := v
	if a := v.Approval; a != nil {
		c := *a
		c.ExpiresIn, still.Approval = "", &c
	}
	if q := v.Question; q != nil {
		c := *q
		c.ExpiresIn, still.Question = "", &c
	}
	key, err := renderHTML(ctx, ui.ChatTail(still))
	if err != nil {
		return ChatPatch{}, err
	}
	if !sent.known || key != sent.tail {
		tail, err := renderHTML(ctx, ui.ChatTail(v))
		if err != nil {
			return ChatPatch{}, err
		}
		sent.tail, out.Tail = key, &tail
	}
	sent.known = true
	return out, nil
}

func renderHTML(ctx context.Context, c templ.Component) (string, error) {
	var b bytes.Buffer
	err := c.Render(ctx, &b)
	return b.String(), err
}

// chatLive is GET /c/{id}/live: the chat page's feed. The model's deltas
// as /api/stream sends them ("delta"), and after each stored event of the
// conversation, once the projections have it, a ChatPatch ("chat", id:
// the event's sequence). A feed resumed after a sequence the projection
// has passed starts with a patch of everything.
func (s *server) chatLive(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p := s.cfg.Pages
	if err := events.ValidID(id); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_id", err.Error())
		return
	}
	if p == nil || s.cfg.Log == nil {
		http.NotFound(w, r)
		return
	}
	from, ok := resumeFrom(w, r)
	if !ok {
		return
	}
	csrf := ensureCSRF(w, r)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	lossy := make(chan []byte, 256)
	if s.cfg.Live != nil {
		stop, err := s.cfg.Live(id, func(data []byte) {
			select {
			case lossy <- sseFrame("delta", "", data):
			default: // a slow reader misses deltas, never a patch
			}
		})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		defer stop()
	}
	// What the page holds: the chat as of the sequence it was rendered at.
	sent := &chatSent{keys: map[int]string{}}
	if from > 1 {
		p.caughtUp(ctx, from-1)
	}
	first, err := p.patch(ctx, id, csrf, sent)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	flusher, ok := sseStart(w)
	if !ok {
		return
	}
	patches := make(chan []byte, 1)
	if first.Seq >= from {
		// The projection is past what the page holds: send it all.
		first.Type = "resync"
		body, _ := json.Marshal(first)
		patches <- sseFrame("chat", strconv.FormatUint(first.Seq, 10), body)
	}
	go func() {
		defer cancel()
		for env, err := range s.cfg.Log.Follow(ctx, events.Conv(id).Filter(), from) {
			if err != nil {
				s.logger().Error("chat live", "conversation", id, "err", err)
				return
			}
			p.caughtUp(ctx, env.Seq)
			patch, err := p.patch(ctx, id, csrf, sent)
			if err != nil {
				s.logger().Error("chat live", "conversation", id, "err", err)
				return
			}
			patch.Seq, patch.Type = env.Seq, env.Type
			body, _ := json.Marshal(patch)
			select {
			case patches <- sseFrame("chat", strconv.FormatUint(env.Seq, 10), body):
			case <-ctx.Done():
				return
			}
		}
	}()
	pump(ctx, w, flusher, patches, lossy)
}
