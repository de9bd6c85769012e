package home

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/my-agent-crew/crew/schemas"
)

// yamlFile is one parsed YAML file. It keeps the AST next to the decoded
// value so that any problem found later, by the schema or by a semantic
// check, can be reported at the line and column of the key it concerns.
type yamlFile struct {
	path string
	body ast.Node // nil for an empty document
	val  any      // body as JSON-compatible values (what the schema sees)
}

// loadYAML reads path, refuses the keys this build lacks, validates it
// against schemaPath and decodes it
// strictly into dst, which holds the defaults beforehand: keys present in the
// file overwrite them, absent keys keep them.
func loadYAML(path, schemaPath string, dst any) (*yamlFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, readError(path, err)
	}
	return decodeYAML(path, data, schemaPath, dst)
}

// decodeYAML is loadYAML without the reading; path is only for messages.
func decodeYAML(path string, data []byte, schemaPath string, dst any) (*yamlFile, error) {
	f, err := parseYAML(path, data)
	if err != nil {
		return nil, err
	}
	if err := f.refuseUnbuilt(schemaPath); err != nil {
		return nil, err
	}
	if err := f.validate(schemaPath, reflect.TypeOf(dst)); err != nil {
		return nil, err
	}
	if err := f.decode(dst); err != nil {
		return nil, err
	}
	return f, nil
}

func readError(path string, err error) *ConfigError {
	if errors.Is(err, fs.ErrNotExist) {
		return &ConfigError{File: path, Msg: "missing", Err: err}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &ConfigError{File: path, Msg: "cannot read: " + pe.Err.Error(), Err: err}
	}
	return &ConfigError{File: path, Msg: "cannot read: " + err.Error(), Err: err}
}

func parseYAML(path string, data []byte) (*yamlFile, error) {
	astFile, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, goccyError(path, "syntax error: ", err)
	}
	if len(astFile.Docs) > 1 {
		tk := astFile.Docs[1].Start // the "---"
		if tk == nil {
			tk = astFile.Docs[1].GetToken()
		}
		line, col := tokenPos(tk)
		return nil, &ConfigError{File: path, Line: line, Col: col,
			Msg: fmt.Sprintf("found %d YAML documents, want one", len(astFile.Docs))}
	}
	f := &yamlFile{path: path}
	if len(astFile.Docs) == 1 {
		f.body = astFile.Docs[0].Body
	}
	var v any
	if f.body != nil {
		if err := yaml.NodeToValue(f.body, &v); err != nil {
			return nil, goccyError(path, "", err)
		}
	}
	if v == nil {
		v = map[string]any{} // an empty file means "all defaults"
	}
	f.val = jsonValue(v)
	return f, nil
}

// decode is the strict decode into the Go type. The schema has already
// rejected unknown keys and wrong types, so an error here means the schema
// and the struct disagree; it is still reported with its position.
func (f *yamlFile) decode(dst any) error {
	if f.body == nil {
		return nil
	}
	if err := yaml.NodeToValue(f.body, dst, yaml.Strict()); err != nil {
		return goccyError(f.path, "", err)
	}
	return nil
}

// goccyError turns a goccy error into a one-line *ConfigError; goccy's own
// Error() is multi-line, with the source excerpt.
func goccyError(path, prefix string, err error) *ConfigError {
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return &ConfigError{File: path, Line: 1, Col: 1, Msg: prefix + err.Error(), Err: err}
	}
	line, col := tokenPos(ye.GetToken())
	return &ConfigError{File: path, Line: line, Col: col, Msg: prefix + ye.GetMessage(), Err: err}
}

// jsonValue converts what goccy decodes into `any` into the value types the
// JSON Schema validator understands.
func jsonValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = jsonValue(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[fmt.Sprint(k)] = jsonValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = jsonValue(e)
		}
		return out
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return strconv.FormatFloat(v, 'g', -1, 64) // JSON has no such number
		}
		return v
	case nil, string, bool, int, int64, uint64, float32:
		return v
	case time.Time:
		return v.Format(time.RFC3339Nano)
	default:
		return fmt.Sprint(v)
	}
}

// validate runs the JSON Schema and reports the first problem in file order.
func (f *yamlFile) validate(schemaPath string, goType reflect.Type) error {
	err := schemas.Validate(schemaPath, f.val)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("validate %s: %w", f.path, err)
	}
	var errs []*ConfigError
	for _, leaf := range leaves(ve) {
		errs = append(errs, f.schemaErrors(leaf, goType)...)
	}
	if len(errs) == 0 { // cannot happen with a non-nil error, but never lose it
		return &ConfigError{File: f.path, Line: 1, Col: 1, Msg: "invalid: " + err.Error(), Err: err}
	}
	sort.SliceStable(errs, func(i, j int) bool {
		if errs[i].Line != errs[j].Line {
			return errs[i].Line < errs[j].Line
		}
		return errs[i].Col < errs[j].Col
	})
	return errs[0]
}

// leaves returns the errors that say what is wrong. anyOf/oneOf stay whole:
// their branches only make sense together ("0 or <= 43200"); so does
// propertyNames, whose causes lose the location of the offending key.
func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	switch ve.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf, *kind.PropertyNames:
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}
