//go:build crewtest_guard2

package loop

// guardRemindAt, changed: a build with -tags crewtest_guard2 reminds at the
// 2nd repeat, a code change crew replay must name at its step
// (cmd/crew TestReplayTableEveryFeature). No release is built so.
const guardRemindAt = 2
