// Package loop runs turns. A turn never keeps the conversation in a mutable
// in-memory list: it rebuilds the model's view (State) from the log — a
// snapshot plus the events after it — and everything it decides becomes an
// event appended by the caller.
package loop
