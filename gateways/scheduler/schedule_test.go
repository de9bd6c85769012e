package scheduler

import (
	"maps"
	"reflect"
	"slices"
	"testing"
)

// Profile makes one job per schedule of the agents it is given, in order
// of id, the enabled ones or those written down with enabled: false; an
// agent not given has none run.
func TestProfileMakesTheJobsOfTheSchedules(t *testing.T) {
	off := false
	byAgent := map[string][]Schedule{
		"pong": {
			{Name: "daily digest", Cron: "0 8 * * *", Prompt: "digest"},
			{Name: "inbox", Cron: "*/5 * * * *", Script: "check.sh", ThenPrompt: "sort it", ApprovalTTLSeconds: 60},
			{Name: "week", Cron: "0 9 * * 1", Consolidate: true, Enabled: &off},
		},
		"master": {{Name: "review", Cron: "0 18 * * 5", Command: "review"}},
		"gone":   {{Name: "x", Cron: "* * * * *", Prompt: "x"}},
	}
	loaded := slices.Values([]string{"pong", "master"})
	on := Profile(loaded, func(id string) []Schedule { return byAgent[id] }, true)
	want := []Job{
		{ID: "master-review", Agent: "master", Name: "review", Cron: "0 18 * * 5", Command: "review"},
		{ID: "pong-daily_digest", Agent: "pong", Name: "daily digest", Cron: "0 8 * * *", Prompt: "digest"},
		{ID: "pong-inbox", Agent: "pong", Name: "inbox", Cron: "*/5 * * * *", Script: "check.sh", ThenPrompt: "sort it", ApprovalTTLSeconds: 60},
	}
	if !reflect.DeepEqual(on, want) {
		t.Errorf("enabled jobs\n%+v\nwant\n%+v", on, want)
	}
	disabled := Profile(maps.Keys(map[string]bool{"pong": true}), func(id string) []Schedule { return byAgent[id] }, false)
	if want := []Job{{ID: "pong-week", Agent: "pong", Name: "week", Cron: "0 9 * * 1", Consolidate: true}}; !reflect.DeepEqual(disabled, want) {
		t.Errorf("disabled jobs\n%+v\nwant\n%+v", disabled, want)
	}
}
