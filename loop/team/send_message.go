package team

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed send_message.md
var sendMessageDoc string

// sendMessage is send_message: plain mail to a member's mailbox. It
// changes no task and no plan status (seed 001 §12).
type sendMessage struct{ r *Runtime }

func (sendMessage) Def() tools.Def {
	return tools.Def{Name: "send_message", Description: sendMessageDoc}
}

type sendArgs struct {
	To      string `json:"to" jsonschema:"a teammate's name, or lead"`
	Content string `json:"content"`
}

func (s sendMessage) Run(ctx context.Context, env tools.Env, a sendArgs) (tools.Result, error) {
	t, from, err := s.r.anyone(ctx, env)
	if err != nil {
		return outcome("", err)
	}
	_, err = t.Send(ctx, a.To, func(b *Board, _ *Mailboxes) ([]events.Event, error) {
		if why := recipient(b, from, a.To); why != "" {
			return nil, refuse("%s", why)
		}
		if strings.TrimSpace(a.Content) == "" {
			return nil, refuse("Not sent: the message is empty.")
		}
		return []events.Event{&events.MailSent{From: from, To: a.To, Type: events.MailMessage, Content: a.Content}}, nil
	})
	return outcome(fmt.Sprintf("Sent to %s. It reaches %s before its next step (at once when idle); do not wait or poll for an answer.", a.To, a.To), err)
}

// recipient says why from may not write to, or "".
func recipient(b *Board, from, to string) string {
	if to == from {
		return "Not sent: that is you."
	}
	if to == Lead {
		return ""
	}
	m := b.Members[to]
	if m == nil || m.Conversation == "" {
		return fmt.Sprintf("Not sent: %q is not on the team (members: %s; the lead is %q).", to, strings.Join(b.Roster, ", "), Lead)
	}
	if m.Stopped {
		return fmt.Sprintf("Not sent: %s has shut down.", to)
	}
	return ""
}
