package home

import (
	"encoding/json"
	"io/fs"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/schemas"
)

// The schemas are published for editors and other tools; the Go types are
// what the server uses. This test walks both so they cannot drift: every
// yaml key has a schema property of a matching type and vice versa, and
// every object that is a struct refuses additional properties.
func TestSchemasMatchStructs(t *testing.T) {
	tests := []struct {
		schema string
		typ    reflect.Type
	}{
		{"config.schema.json", reflect.TypeFor[Config]()},
		{"agent.schema.json", reflect.TypeFor[Agent]()},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			data, err := fs.ReadFile(schemas.FS(), tt.schema)
			if err != nil {
				t.Fatal(err)
			}
			var root map[string]any
			if err := json.Unmarshal(data, &root); err != nil {
				t.Fatal(err)
			}
			w := schemaWalker{t: t, root: root}
			w.compare("$", root, tt.typ)
		})
	}
}

type schemaWalker struct {
	t    *testing.T
	root map[string]any
}

func (w schemaWalker) compare(path string, s map[string]any, typ reflect.Type) {
	s = w.resolve(s)
	typ = deref(typ)
	switch typ.Kind() {
	case reflect.Struct:
		w.wantType(path, s, "object")
		w.compareStruct(path, s, typ)
	case reflect.Map:
		w.wantType(path, s, "object")
		elem, ok := s["additionalProperties"].(map[string]any)
		if !ok {
			w.t.Errorf("%s: map in Go, but the schema has no additionalProperties schema", path)
			return
		}
		w.compare(path+".*", elem, typ.Elem())
	case reflect.Slice:
		w.wantType(path, s, "array")
		items, ok := s["items"].(map[string]any)
		if !ok {
			w.t.Errorf("%s: slice in Go, but the schema has no items", path)
			return
		}
		w.compare(path+"[]", items, typ.Elem())
	case reflect.String:
		w.wantType(path, s, "string")
	case reflect.Bool:
		w.wantType(path, s, "boolean")
	case reflect.Int, reflect.Int64:
		w.wantType(path, s, "integer")
	case reflect.Float64:
		w.wantType(path, s, "number")
	default:
		w.t.Errorf("%s: Go kind %s has no schema mapping in this test", path, typ.Kind())
	}
}

func (w schemaWalker) compareStruct(path string, s map[string]any, typ reflect.Type) {
	if s["additionalProperties"] != false {
		w.t.Errorf("%s: additionalProperties must be false", path)
	}
	props, _ := s["properties"].(map[string]any)
	fields := map[string]reflect.StructField{}
	for _, f := range yamlFields(typ) {
		fields[yamlKey(f)] = f
	}
	for _, k := range sortedKeys(fields) {
		p, ok := props[k].(map[string]any)
		if !ok {
			w.t.Errorf("%s.%s: yaml key of %s.%s is missing from the schema", path, k, typ.Name(), fields[k].Name)
			continue
		}
		w.compare(path+"."+k, p, fields[k].Type)
	}
	for _, k := range sortedKeys(props) {
		if _, ok := fields[k]; !ok {
			w.t.Errorf("%s.%s: schema property has no yaml-tagged field in %s", path, k, typ.Name())
		}
	}
}

// resolve follows a local "$ref": "#/$defs/name".
func (w schemaWalker) resolve(s map[string]any) map[string]any {
	ref, ok := s["$ref"].(string)
	if !ok {
		return s
	}
	defs, _ := w.root["$defs"].(map[string]any)
	def, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
	if !ok {
		w.t.Fatalf("unresolvable $ref %q", ref)
	}
	return w.resolve(def)
}

func (w schemaWalker) wantType(path string, s map[string]any, want string) {
	if got := s["type"]; got != want {
		w.t.Errorf("%s: schema type %v, want %q", path, got, want)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
