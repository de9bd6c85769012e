package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Typed is a tool whose arguments are the Go struct Args: what Func
// wraps. Its Def leaves Params empty (Func derives them from Args) and
// Run gets the arguments decoded. It may implement the typed hooks:
// NeedsApproval() bool, ReadOnly() bool, Check(Env, Args) error,
// AskWhen(Env, Args) string, AllowWhen(Env, Args) bool.
type Typed[Args any] interface {
	Def() Def
	Run(ctx context.Context, env Env, a Args) (Result, error)
}

// Func is a Typed tool as a Tool, as the MCP SDK's AddTool[In, Out] makes
// a handler of typed input a tool: the JSON Schema the model is sent is
// derived from Args (Schema), and a call's arguments are decoded into
// Args once, strictly (an unknown field, a value of the wrong type or
// trailing data is refused with which field and what was wrong), before
// the tool's Run or hooks see them. The tool's result stays a Result (the
// text the model reads, parts, meta): there is no structured output for
// a second type parameter to describe.
type Func[Args any] struct {
	impl   Typed[Args]
	def    Def
	hooks  hookSet
	gated  Gated
	reader Reader
	check  func(Env, Args) error
	ask    func(Env, Args) string
	allow  func(Env, Args) bool
}

// hookSet says which gate hooks a tool has (HasAsker, HasAllower).
type hookSet struct{ ask, allow bool }

// NewFunc makes t a Tool. It panics when Args has no schema (a type
// JSON cannot carry, a malformed schema tag): a programming error found
// by any test that builds the registry.
func NewFunc[Args any](t Typed[Args]) *Func[Args] {
	f := &Func[Args]{impl: t, def: t.Def()}
	if f.def.Params != nil {
		panic(fmt.Sprintf("tools: %s declares Params: Func derives them from its arguments", f.def.Name))
	}
	switch t.(type) {
	case Asker, Allower, Checker: // a hook on raw arguments would never be asked
		panic(fmt.Sprintf("tools: %s has a hook on raw arguments: take its arguments (%T)", f.def.Name, *new(Args)))
	}
	f.def.Params = MustSchema[Args]()
	f.gated, _ = t.(Gated)
	f.reader, _ = t.(Reader)
	if c, ok := t.(interface{ Check(Env, Args) error }); ok {
		f.check = c.Check
	}
	if a, ok := t.(interface{ AskWhen(Env, Args) string }); ok {
		f.ask, f.hooks.ask = a.AskWhen, true
	}
	if a, ok := t.(interface{ AllowWhen(Env, Args) bool }); ok {
		f.allow, f.hooks.allow = a.AllowWhen, true
	}
	return f
}

// Tool is the typed tool f wraps (for a test or a type switch).
func (f *Func[Args]) Tool() Typed[Args] { return f.impl }

func (f *Func[Args]) Def() Def { return f.def }

// Decode is raw as Args, or the failure the model reads.
func (f *Func[Args]) Decode(raw json.RawMessage) (Args, error) {
	return Decode[Args](f.def.Name, raw)
}

func (f *Func[Args]) Run(ctx context.Context, env Env, raw json.RawMessage) (Result, error) {
	a, err := f.Decode(raw)
	if err != nil {
		return Failf("%s", err), nil
	}
	return f.impl.Run(ctx, env, a)
}

func (f *Func[Args]) NeedsApproval() bool { return f.gated != nil && f.gated.NeedsApproval() }
func (f *Func[Args]) ReadOnly() bool      { return f.reader != nil && f.reader.ReadOnly() }

// Check refuses arguments that do not decode, then asks the tool's own
// Check.
func (f *Func[Args]) Check(env Env, raw json.RawMessage) error {
	a, err := f.Decode(raw)
	if err != nil {
		return err
	}
	if f.check != nil {
		return f.check(env, a)
	}
	return nil
}

// AskWhen is the tool's AskWhen on the decoded arguments; arguments that
// do not decode never ask (Check refuses them).
func (f *Func[Args]) AskWhen(env Env, raw json.RawMessage) string {
	if f.ask == nil {
		return ""
	}
	a, err := f.Decode(raw)
	if err != nil {
		return ""
	}
	return f.ask(env, a)
}

// AllowWhen is the tool's AllowWhen on the decoded arguments.
func (f *Func[Args]) AllowWhen(env Env, raw json.RawMessage) bool {
	if f.allow == nil {
		return false
	}
	a, err := f.Decode(raw)
	if err != nil {
		return false
	}
	return f.allow(env, a)
}

func (f *Func[Args]) hookSet() hookSet { return f.hooks }

// hooked is a tool that answers every hook method and says which it has
// (Func; a replayed tool forwards them).
type hooked interface{ hookSet() hookSet }

// HasAsker reports whether some calls of t ask for themselves (Asker).
func HasAsker(t Tool) bool {
	if h, ok := t.(hooked); ok {
		return h.hookSet().ask
	}
	_, ok := t.(Asker)
	return ok
}

// HasAllower reports whether some calls of t are routine (Allower).
func HasAllower(t Tool) bool {
	if h, ok := t.(hooked); ok {
		return h.hookSet().allow
	}
	_, ok := t.(Allower)
	return ok
}

// Decode reads a call's JSON arguments into Args strictly: unknown fields
// are refused so a model that misspells a parameter learns so; empty or
// null arguments decode as {}. The error's text is for the model: the
// tool, and which field was wrong and how.
func Decode[Args any](tool string, raw json.RawMessage) (Args, error) {
	var a Args
	if msg, ok := decodeArgs(tool, raw, &a); !ok {
		return a, errors.New(msg)
	}
	return a, nil
}

// Schema is the JSON Schema of a tool's arguments derived from Args, a
// struct (github.com/google/jsonschema-go, as the MCP SDK derives its
// tools' input schemas): each exported field is a property named by its
// json tag, required unless the tag says omitempty, described by its
// jsonschema tag; no other property is allowed. A schema tag adds what a
// Go type cannot say, comma-separated: minimum=N, maximum=N,
// minLength=N, maxLength=N, minItems=N, maxItems=N, format=F,
// enum=a|b|c (on a slice, the items' enum) and, last, pattern=RE. A nullable type (a pointer,
// a slice) is declared as its plain type: a null argument counts as
// absent.
func Schema[Args any]() (json.RawMessage, error) {
	t := reflect.TypeFor[Args]()
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("tools: arguments %s are not a struct", t)
	}
	s, err := jsonschema.For[Args](nil)
	if err != nil {
		return nil, fmt.Errorf("tools: schema of %s: %w", t, err)
	}
	if err := extras(t, s); err != nil {
		return nil, fmt.Errorf("tools: schema of %s: %w", t, err)
	}
	plain(s)
	if len(s.Properties) == 0 {
		s.Properties = map[string]*jsonschema.Schema{} // "properties": {} for a tool without arguments
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("tools: schema of %s: %w", t, err)
	}
	return b, nil
}

// MustSchema is Schema for a declaration: it panics on an error.
func MustSchema[Args any]() json.RawMessage {
	b, err := Schema[Args]()
	if err != nil {
		panic(err)
	}
	return b
}

// plain declares every nullable type as its plain one ("null" dropped).
func plain(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) > 0 {
		ts := slices.DeleteFunc(slices.Clone(s.Types), func(t string) bool { return t == "null" })
		if len(ts) == 1 {
			s.Type, s.Types = ts[0], nil
		} else {
			s.Types = ts
		}
	}
	for _, p := range s.Properties {
		plain(p)
	}
	plain(s.Items)
	if s.AdditionalProperties != nil {
		plain(s.AdditionalProperties)
	}
}

// extras applies the schema tags of struct type t's fields to s.
func extras(t reflect.Type, s *jsonschema.Schema) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
		if s.Items != nil {
			s = s.Items
		}
	}
	if t.Kind() != reflect.Struct || s == nil {
		return nil
	}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := s.Properties[name]
		if p == nil {
			continue
		}
		if tag, ok := f.Tag.Lookup("schema"); ok {
			if err := applyTag(f, p, tag); err != nil {
				return err
			}
		}
		if err := extras(f.Type, p); err != nil {
			return err
		}
	}
	return nil
}

// applyTag sets what a schema tag on field f says on its property p.
func applyTag(f reflect.StructField, p *jsonschema.Schema, tag string) error {
	if i := strings.Index(tag, "pattern="); i >= 0 { // last: a pattern may hold commas
		p.Pattern, tag = tag[i+len("pattern="):], strings.TrimSuffix(tag[:i], ",")
		if _, err := regexp.Compile(p.Pattern); err != nil || p.Pattern == "" {
			return fmt.Errorf("field %s: schema tag pattern=%q is not a regular expression", f.Name, p.Pattern)
		}
		if tag == "" {
			return nil
		}
	}
	for _, kv := range strings.Split(tag, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || v == "" {
			return fmt.Errorf("field %s: schema tag %q: want key=value", f.Name, kv)
		}
		num := func() (*float64, error) {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("field %s: schema tag %s=%q is not a number", f.Name, k, v)
			}
			return &n, nil
		}
		count := func() (*int, error) {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("field %s: schema tag %s=%q is not a count", f.Name, k, v)
			}
			return &n, nil
		}
		var err error
		switch k {
		case "minimum":
			p.Minimum, err = num()
		case "maximum":
			p.Maximum, err = num()
		case "minLength":
			p.MinLength, err = count()
		case "maxLength":
			p.MaxLength, err = count()
		case "minItems":
			p.MinItems, err = count()
		case "maxItems":
			p.MaxItems, err = count()
		case "format":
			p.Format = v
		case "enum":
			target := p
			if p.Items != nil {
				target = p.Items
			}
			target.Enum = nil
			for _, e := range strings.Split(v, "|") {
				target.Enum = append(target.Enum, e)
			}
		default:
			return fmt.Errorf("field %s: unknown schema tag key %q", f.Name, k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
