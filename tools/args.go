package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// decodeArgs reads a call's JSON arguments into v strictly (Decode):
// unknown fields are refused so a model that misspells a parameter learns
// so. Empty or null arguments decode as {}. The returned message is for
// the model.
func decodeArgs(tool string, args json.RawMessage, v any) (msg string, ok bool) {
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

// CheckArgs checks a call's arguments against the top level of its
// tool's JSON Schema: an object, every required property present and not
// null, each property of its declared JSON type, none the schema leaves
// out when it says additionalProperties: false. Deeper rules (formats,
// ranges, nested objects) are the tool's own to check.
func CheckArgs(tool string, schema, args json.RawMessage) error {
	var sc struct {
		Properties           map[string]struct{ Type any } `json:"properties"`
		Required             []string                      `json:"required"`
		AdditionalProperties *bool                         `json:"additionalProperties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &sc) != nil {
		return nil
	}
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(args, &got); err != nil {
		return fmt.Errorf("invalid arguments for %s: want a JSON object (%v)", tool, err)
	}
	for _, name := range sc.Required {
		if v, ok := got[name]; !ok || string(bytes.TrimSpace(v)) == "null" {
			return fmt.Errorf("invalid arguments for %s: %q is required", tool, name)
		}
	}
	names := make([]string, 0, len(got))
	for name := range got {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p, ok := sc.Properties[name]
		if !ok {
			if sc.AdditionalProperties != nil && !*sc.AdditionalProperties {
				return fmt.Errorf("invalid arguments for %s: unknown argument %q", tool, name)
			}
			continue
		}
		if want := jsonTypes(p.Type); len(want) > 0 && !slices.Contains(want, jsonType(got[name])) &&
			!(jsonType(got[name]) == "integer" && slices.Contains(want, "number")) {
			return fmt.Errorf("invalid arguments for %s: %q must be %s, not %s", tool, name, strings.Join(want, " or "), jsonType(got[name]))
		}
	}
	return nil
}

// jsonTypes is a schema's "type": one name or a list.
func jsonTypes(t any) []string {
	switch v := t.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// jsonType names a JSON value's type as JSON Schema does.
func jsonType(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "null"
	}
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	if bytes.ContainsAny(v, ".eE") {
		var f float64
		if json.Unmarshal(v, &f) == nil && f == float64(int64(f)) {
			return "integer"
		}
		return "number"
	}
	return "integer"
}
