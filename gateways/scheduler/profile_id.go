package scheduler

import "strings"

// ProfileJobID is the id of agent's schedule name (schedules: in
// agent.yaml): one subject token, whatever the name holds.
func ProfileJobID(agent, name string) string {
	var b strings.Builder
	for _, r := range agent + "-" + name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	id := b.String()
	if len(id) > 100 {
		id = id[:100]
	}
	return id
}
