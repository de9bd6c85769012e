package summarize

import "github.com/my-agent-crew/crew/events/refusal"

// The package's errors are events/refusal's, so a door maps them
// without importing summarize.
var (
	// ErrUnknownConversation means the log holds no conversation with the
	// id.
	ErrUnknownConversation = refusal.ErrSummarizeUnknownConversation
	// ErrNothingToSummarize means the conversation has no message since its
	// last summary.
	ErrNothingToSummarize = refusal.ErrNothingToSummarize
	// ErrNotClosable means the conversation cannot be closed now: it is
	// closed already, a run is open, or messages wait for an answer.
	ErrNotClosable = refusal.ErrNotClosable
)
