package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"unicode/utf8"
)

//go:embed tool_output_read.md
var toolOutputReadDescription string

const (
	defaultOutputChars = 8000
	maxOutputChars     = 50000
)

// ToolOutputRead pages through the saved full output of an earlier call of
// the same conversation (see Spill).
type ToolOutputRead struct{}

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (ToolOutputRead) ReadOnly() bool { return true }

func (ToolOutputRead) Def() Def {
	return Def{Name: "tool_output_read", Description: toolOutputReadDescription, Default: true, Uncut: true}
}

type toolOutputReadArgs struct {
	CallID string `json:"call_id" jsonschema:"The id of the earlier tool call whose output was cut."`
	Offset int    `json:"offset,omitempty" jsonschema:"Character to start at. Default 0." schema:"minimum=0"`
	Limit  int    `json:"limit,omitempty" jsonschema:"How many characters to return. Default 8000." schema:"minimum=1,maximum=50000"`
}

func (ToolOutputRead) Run(ctx context.Context, env Env, a toolOutputReadArgs) (Result, error) {
	if a.CallID == "" {
		return Failf("call_id is required"), nil
	}
	if a.Offset < 0 || a.Limit < 0 {
		return Failf("offset and limit must not be negative"), nil
	}
	limit := a.Limit
	if limit == 0 {
		limit = defaultOutputChars
	}
	limit = min(limit, maxOutputChars)
	store, conv, err := env.spills()
	if err != nil {
		return Result{}, fmt.Errorf("tools: tool_output_read: %w", err)
	}
	data, err := store.Get(ctx, conv, spillName(a.CallID))
	if errors.Is(err, fs.ErrNotExist) {
		return Failf("no saved output for call_id %q in this conversation (only outputs that were cut are saved)", a.CallID), nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("tools: tool_output_read %s: %w", a.CallID, err)
	}
	full := string(data)
	total := utf8.RuneCountInString(full)
	if a.Offset >= total {
		return Failf("offset %d is past the end of the output (%d characters)", a.Offset, total), nil
	}
	start, end := runeIndex(full, a.Offset), runeIndex(full, a.Offset+limit)
	last := min(a.Offset+limit, total)
	note := "end of output"
	if last < total {
		note = fmt.Sprintf("%d characters remain; call again with offset %d", total-last, last)
	}
	return Result{Output: fmt.Sprintf("%s\n[characters %d–%d of %d; %s]", full[start:end], a.Offset, last, total, note)}, nil
}

// runeIndex returns the byte index of the n-th rune of s, or len(s).
func runeIndex(s string, n int) int {
	i := 0
	for j := range s {
		if i == n {
			return j
		}
		i++
	}
	return len(s)
}
