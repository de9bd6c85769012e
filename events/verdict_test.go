package events

import "testing"

// crew verify says what Verified.Verdict says, with its exit code: 0 only
// when the home's key proves the writer; 1, on stderr, for a file whose
// keyed hashes are missing where the home has a key; 3 for an unproven
// origin unless only the chain was asked for.
func TestVerdict(t *testing.T) {
	const why = "key of the home /h"
	for _, tc := range []struct {
		name                   string
		v                      Verified
		haveKey, integrityOnly bool
		line                   string
		code                   int
		toStderr               bool
	}{
		{"proven", Verified{Conversation: "c1", Events: 3, Keyed: true, Proven: true}, true, false,
			"ok: 3 events of conversation c1: intact, written by this home (key of the home /h)", 0, false},
		{"stripped", Verified{Conversation: "c1", Events: 3}, true, false,
			"f.jsonl: line 1: no keyed hash, but this home has an audit key (key of the home /h): its keyed hashes were removed, or this home did not write it", 1, true},
		{"old", Verified{Conversation: "c1", Events: 3}, false, false,
			"ok: 3 events of conversation c1: hash chain intact; origin not proven: the file has no keyed hashes (an export from before keyed chains, or they were removed)", 3, false},
		{"old, chain only", Verified{Conversation: "c1", Events: 3}, false, true,
			"ok: 3 events of conversation c1: hash chain intact; origin not proven: the file has no keyed hashes (an export from before keyed chains, or they were removed)", 0, false},
		{"keyed, no key", Verified{Conversation: "c1", Events: 3, Keyed: true}, false, false,
			"ok: 3 events of conversation c1: hash chain intact; origin not proven (key of the home /h)", 3, false},
		{"keyed, --no-key", Verified{Conversation: "c1", Events: 3, Keyed: true}, false, true,
			"ok: 3 events of conversation c1: hash chain intact; origin not proven (key of the home /h)", 0, false},
	} {
		line, code, toStderr := tc.v.Verdict("f.jsonl", why, tc.haveKey, tc.integrityOnly)
		if line != tc.line || code != tc.code || toStderr != tc.toStderr {
			t.Errorf("%s: Verdict = %q, %d, stderr %v\nwant %q, %d, stderr %v", tc.name, line, code, toStderr, tc.line, tc.code, tc.toStderr)
		}
	}
}
