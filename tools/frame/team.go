package frame

import (
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/fence"
)

// The team runtime's frames (R-TEAM): mail and assignments it delivers
// into a conversation are read inside them, never as the owner's words.
// Only the harness writes them: the same text anywhere else — an owner's
// message, a teammate's mail, a tool's output — is neutralised by Unframe.
const (
	TeamFrame    = "[Team events — delivered by the team runtime, not the owner's words]"
	EndTeamFrame = "[End of team events]"
)

// Item types of a delivery that assign a task (beside the mail types).
const (
	ItemAssigned    = "assigned"
	ItemAutoClaimed = "auto_claimed"
)

const teamFrameLike = `team[\s\p{Cf}]+events|end[\s\p{Cf}]+of[\s\p{Cf}]+team[\s\p{Cf}]+events|auto[\s\p{Cf}-]*claimed[\s\p{Cf}]+task|assigned[\s\p{Cf}]+task`

// TeamText is what the model reads for a delivery: one framed block, each
// item's words neutralised.
//
// The items — what teammates and the lead wrote — are sealed in a nonce
// fence inside the frame (R-SEC-1): a mail cannot close it and write on as
// the harness or the owner.
func TeamText(d *events.TeamDelivery) string {
	var b strings.Builder
	for _, it := range d.Items {
		b.WriteString("\n")
		content := indent(Unframe(strings.TrimSpace(it.Content)))
		switch it.Type {
		case ItemAssigned, ItemAutoClaimed:
			label := "Assigned task"
			if it.Type == ItemAutoClaimed {
				label = "Auto-claimed task"
			}
			fmt.Fprintf(&b, "[%s %s] %s", label, it.TaskID, content)
			continue
		}
		var tags []string
		tags = append(tags, it.Type)
		if it.TaskID != "" {
			tags = append(tags, "task "+it.TaskID)
		}
		if it.RequestID != "" {
			tags = append(tags, "request "+it.RequestID)
		}
		if it.Status != "" {
			tags = append(tags, it.Status)
		}
		fmt.Fprintf(&b, "- from %s (%s): %s", Unframe(it.From), strings.Join(tags, ", "), content)
	}
	return TeamFrame + "\n" + fence.Seal("team mail", strings.TrimPrefix(b.String(), "\n")) + "\n" + EndTeamFrame
}

// indent keeps a multi-line text inside its item.
func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }
