//go:build !crewtest_guard2

package loop

// guardRemindAt is the repeat the loop guard reminds the model at
// (R-LOOP-3). guard_remind_changed.go is the same code changed, which the
// replay table builds to show a changed guard limit named at its step
// (cmd/crew TestReplayTableEveryFeature).
const guardRemindAt = 3
