package home

import (
	"fmt"
	"strings"
)

// ConfigError is a problem in one home file. Error() is always a single line
// so the CLI and the server log can print it as is.
type ConfigError struct {
	File string // absolute path of the file
	Line int    // 1-based; 0 when the problem has no position (missing file)
	Col  int    // 1-based; 0 when Line is 0
	Key  string // dotted key path such as "nats.sync" or "schedules[0].cron"; may be empty
	Msg  string // human message; it already names Key when there is one
	Err  error  // underlying error, if any (e.g. fs.ErrNotExist)
}

func (e *ConfigError) Error() string {
	msg := oneLine.Replace(e.Msg) // one line, whatever the cause said
	if e.Line <= 0 {
		return fmt.Sprintf("%s: %s", e.File, msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, msg)
}

var oneLine = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

// Unwrap lets callers test the cause, e.g. errors.Is(err, fs.ErrNotExist).
func (e *ConfigError) Unwrap() error { return e.Err }
