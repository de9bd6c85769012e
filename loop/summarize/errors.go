package summarize

import "errors"

var (
	// ErrUnknownConversation means the log holds no conversation with the
	// id.
	ErrUnknownConversation = errors.New("summarize: no such conversation")
	// ErrNothingToSummarize means the conversation has no message since its
	// last summary.
	ErrNothingToSummarize = errors.New("nothing to summarize: no message since the last summary")
	// ErrNotClosable means the conversation cannot be closed now: it is
	// closed already, a run is open, or messages wait for an answer.
	ErrNotClosable = errors.New("cannot close")
)
