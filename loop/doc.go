// Package loop runs turns. A turn never keeps the conversation in a mutable
// in-memory list: it rebuilds the model's view (State) from the log — a
// snapshot plus the events after it — and everything it decides becomes an
// event, appended through the conversation's single writer (Conv.Append on
// an injected Appender: the real log, or an eventstest.MemLog in a replay).
package loop
