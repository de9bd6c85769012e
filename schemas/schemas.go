// Package schemas holds the JSON Schemas of every event type and of the
// config files (config.yaml, agent.yaml), embedded so the binary and the tests
// validate against exactly the files in this folder.
//
// Layout: events/<type>.v<N>.json for event envelopes, config.schema.json and
// agent.schema.json for the YAML files.
package schemas

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed *.json events/*.json
var files embed.FS

// FS returns the embedded schema files.
func FS() fs.FS { return files }

var (
	mu       sync.Mutex
	compiled = map[string]*jsonschema.Schema{}
)

// Get returns the compiled schema at path (e.g. "agent.schema.json" or
// "events/message_received.v1.json"). Compiled schemas are cached.
func Get(path string) (*jsonschema.Schema, error) {
	mu.Lock()
	defer mu.Unlock()
	if s, ok := compiled[path]; ok {
		return s, nil
	}
	b, err := files.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", path, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", path, err)
	}
	c := jsonschema.NewCompiler()
	url := "mem:///" + path
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("schema %s: %w", path, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", path, err)
	}
	compiled[path] = s
	return s, nil
}

// Validate checks v (a value decoded from JSON: map[string]any, []any, string,
// float64/json.Number, bool, nil) against the schema at path. The returned
// error is a *jsonschema.ValidationError when v does not conform.
func Validate(path string, v any) error {
	s, err := Get(path)
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// ValidateJSON decodes data and validates it against the schema at path.
func ValidateJSON(path string, data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return Validate(path, v)
}
