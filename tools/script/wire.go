// Package script runs tool_script's Starlark (R-SCR) in a child process
// of the crew binary (`crew __script`), which speaks JSON lines with the
// server over its stdin and stdout: the child only computes and asks; every
// tool call, model question and store write is the server's (Runner).
package script

import "encoding/json"

// start is the first line the server writes.
type start struct {
	Script string                     `json:"script"`
	Store  map[string]json.RawMessage `json:"store"`
	Steps  uint64                     `json:"steps"`
}

// request is a line from the child.
type request struct {
	Op    string          `json:"op"` // call, names, search, describe, llm, print, done
	ID    int             `json:"id,omitempty"`
	Calls []CallSpec      `json:"calls,omitempty"`
	Batch bool            `json:"batch,omitempty"`
	Query string          `json:"query,omitempty"`
	Name  string          `json:"name,omitempty"`
	LLM   *LLMAsk         `json:"llm,omitempty"`
	Text  string          `json:"text,omitempty"`
	Store json.RawMessage `json:"store,omitempty"` // done: the store after the run
	Error string          `json:"error,omitempty"` // done: why the script failed
}

// CallSpec is one tool call a script asks for.
type CallSpec struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// LLMAsk is an llm.classify or llm.summarise question.
type LLMAsk struct {
	Kind     string   `json:"kind"` // classify or summarise
	Text     string   `json:"text"`
	Labels   []string `json:"labels,omitempty"`
	MaxChars int      `json:"max_chars,omitempty"`
}

// reply is the server's answer to one request.
type reply struct {
	ID      int             `json:"id"`
	Results []Value         `json:"results,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
	Stop    string          `json:"stop,omitempty"` // the script must end with this line
}

// Value is what one call gives the script: {"output": text} or
// {"error": text}.
type Value struct {
	Output *string `json:"output,omitempty"`
	Error  *string `json:"error,omitempty"`
}

func ok(s string) Value   { return Value{Output: &s} }
func fail(s string) Value { return Value{Error: &s} }
