// Package notes composes the turn notes (R-CTX-2): what travels with a
// turn-opening message (New, the loop's Conv opener), and the transcript
// and prompt of a conversation summary (Transcript, SummaryPrompt).
//
// # Turn notes
//
// What changes between two turns of one conversation (the summary of the
// previous conversation on the channel, yesterday's and today's daily notes)
// does not go in the system prompt, which stays byte-stable for the
// provider's cache. Items reads those items; Compose compares each with what
// the conversation was last told (length and digest, read back from the
// stored messages) and returns only what changed, to be stored with the
// message and never rewritten: an untold item whole, a note that only grew
// its new lines, a rewritten item whole and marked as replacing the old
// version, an emptied item one line. Nothing new gives nil, and the message
// reaches the model exactly as written.
package notes
