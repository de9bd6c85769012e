package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// DecodeArgs reads a call's JSON arguments into v strictly: unknown fields are
// refused so a model that misspells a parameter learns so. Empty or null
// arguments decode as {}. The returned message is for the model.
func DecodeArgs(tool string, args json.RawMessage, v any) (msg string, ok bool) {
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Sprintf("invalid arguments for %s: %v", tool, err), false
	}
	if dec.More() {
		return fmt.Sprintf("invalid arguments for %s: trailing data after the JSON object", tool), false
	}
	return "", true
}

// Failf returns a failure Result for the model.
func Failf(format string, a ...any) Result {
	return Result{Output: fmt.Sprintf(format, a...), IsError: true}
}

// params is a JSON Schema object literal for a Def.
func params(schema string) json.RawMessage {
	if !json.Valid([]byte(schema)) {
		panic("tools: invalid schema literal: " + schema)
	}
	return json.RawMessage(schema)
}
