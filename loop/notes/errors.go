package notes

import "errors"

// ErrNoDir: Items was given no agent folder.
var ErrNoDir = errors.New("memory folder unavailable")
