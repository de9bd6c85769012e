package home

import (
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// patternHelp says in words what the schema patterns mean; a raw regular
// expression is no help to someone editing a YAML file.
var patternHelp = map[string]string{
	`^(openrouter|ollama|fake):\S+$`:                "provider:model with provider openrouter, ollama or fake",
	`^[a-z0-9][a-z0-9_-]{0,62}$`:                    "an agent id (lowercase letters, digits, _ and -)",
	`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`:              "a name of letters, digits, _ and - (at most 63)",
	`^(\[[0-9A-Fa-f:.]+\]|[^\s:\[\]]*):[0-9]{1,5}$`: "host:port",
	`^https?://[^\s]+$`:                             "an http:// or https:// URL",
	`^(\*\.)?[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$|^[0-9A-Fa-f:.]+$`: "a host such as github.com, *.github.com or an IP address (no scheme, port or path)",
}

// schemaErrors turns one schema failure into positioned errors (several for
// an object with several unknown keys).
func (f *yamlFile) schemaErrors(ve *jsonschema.ValidationError, goType reflect.Type) []*ConfigError {
	loc := ve.InstanceLocation
	switch k := ve.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		var out []*ConfigError
		for _, name := range k.Properties {
			out = append(out, f.unknownKey(loc, name, goType))
		}
		return out
	case *kind.PropertyNames:
		key := keyPath(append(cloneLoc(loc), k.Property))
		msg := fmt.Sprintf("%s: invalid name %q, want %s", keyPath(loc), k.Property, patternHelp[`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`])
		return []*ConfigError{f.errAtKey(loc, k.Property, key, msg)}
	case *kind.Required:
		var out []*ConfigError
		for _, name := range k.Missing {
			key := keyPath(append(cloneLoc(loc), name))
			out = append(out, f.errAt(loc, key, fmt.Sprintf("missing required key %q", key)))
		}
		return out
	}
	key := keyPath(loc)
	msg := fmt.Sprintf("%s: %s", keyLabel(key), describe(ve, f.valueAt(loc)))
	return []*ConfigError{f.errAt(loc, key, msg)}
}

func (f *yamlFile) unknownKey(loc []string, name string, goType reflect.Type) *ConfigError {
	key := keyPath(append(cloneLoc(loc), name))
	msg := fmt.Sprintf("unknown key %q", key)
	if s := suggest(name, yamlKeysAt(goType, loc)); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", keyPath(append(cloneLoc(loc), s)))
	}
	return f.errAtKey(loc, name, key, msg)
}

// describe says what the value must be and what it is.
func describe(ve *jsonschema.ValidationError, got any) string {
	want, ok := requirement(ve)
	if !ok {
		return fmt.Sprintf("fails schema rule %q", strings.Join(ve.ErrorKind.KeywordPath(), "/"))
	}
	return fmt.Sprintf("must be %s, got %s", want, display(got))
}

// requirement phrases one schema rule so that it reads after "must be".
func requirement(ve *jsonschema.ValidationError) (string, bool) {
	switch k := ve.ErrorKind.(type) {
	case *kind.Type:
		return typeNames(k.Want), true
	case *kind.Enum:
		return "one of " + joinDisplay(k.Want), true
	case *kind.Const:
		return display(k.Want), true
	case *kind.Minimum:
		return ">= " + ratString(k.Want), true
	case *kind.Maximum:
		return "<= " + ratString(k.Want), true
	case *kind.ExclusiveMinimum:
		return "> " + ratString(k.Want), true
	case *kind.ExclusiveMaximum:
		return "< " + ratString(k.Want), true
	case *kind.Pattern:
		if h, ok := patternHelp[k.Want]; ok {
			return h, true
		}
		return fmt.Sprintf("text matching %q", k.Want), true
	case *kind.MinLength:
		if k.Want == 1 {
			return "a non-empty string", true
		}
		return fmt.Sprintf("at least %d characters long", k.Want), true
	case *kind.MaxLength:
		return fmt.Sprintf("at most %d characters long", k.Want), true
	case *kind.MinItems:
		return fmt.Sprintf("a list of at least %d (leave the key out for the default)", k.Want), true
	case *kind.AnyOf, *kind.OneOf, *kind.Group, *kind.Schema, *kind.Reference, *kind.AllOf:
		return alternatives(ve)
	}
	return "", false
}

// alternatives joins the requirements of the branches of an anyOf/oneOf.
func alternatives(ve *jsonschema.ValidationError) (string, bool) {
	var parts []string
	for _, c := range ve.Causes {
		r, ok := requirement(c)
		if !ok {
			return "", false
		}
		parts = append(parts, r)
	}
	if len(parts) == 0 {
		return "", false
	}
	sep := " or "
	if _, ok := ve.ErrorKind.(*kind.AnyOf); !ok {
		if _, ok := ve.ErrorKind.(*kind.OneOf); !ok {
			sep = " and " // every rule of one branch must hold
		}
	}
	return strings.Join(parts, sep), true
}

var typeName = map[string]string{
	"object":  "a mapping",
	"array":   "a list",
	"string":  "a string",
	"integer": "an integer",
	"number":  "a number",
	"boolean": "true or false",
	"null":    "empty",
}

func typeNames(want []string) string {
	names := make([]string, len(want))
	for i, w := range want {
		names[i] = typeName[w]
		if names[i] == "" {
			names[i] = w
		}
	}
	return strings.Join(names, " or ")
}

func ratString(r *big.Rat) string {
	v, _ := r.Float64()
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// display shows a value the way it would look in YAML.
func display(v any) string {
	switch v := v.(type) {
	case nil:
		return "nothing"
	case string:
		return strconv.Quote(v)
	case map[string]any:
		return "a mapping"
	case []any:
		if len(v) == 0 {
			return "an empty list"
		}
		return "a list"
	default:
		return fmt.Sprint(v)
	}
}

func joinDisplay(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = display(v)
	}
	return strings.Join(parts, ", ")
}

// keyPath renders an instance location the way a user would name the key:
// nats.sync, schedules[0].cron.
func keyPath(loc []string) string {
	var b strings.Builder
	for _, seg := range loc {
		if _, err := strconv.Atoi(seg); err == nil {
			b.WriteString("[" + seg + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

func keyLabel(key string) string {
	if key == "" {
		return "top level"
	}
	return key
}

func cloneLoc(loc []string) []string { return append([]string(nil), loc...) }

// yamlKeysAt lists the keys valid in the mapping at loc, from the yaml tags
// of the Go type (which a test keeps equal to the schema).
func yamlKeysAt(t reflect.Type, loc []string) []string {
	for _, seg := range loc {
		t = deref(t)
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldByKey(t, seg)
			if !ok {
				return nil
			}
			t = f.Type
		case reflect.Slice, reflect.Map:
			t = t.Elem()
		default:
			return nil
		}
	}
	t = deref(t)
	if t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for _, f := range yamlFields(t) {
		keys = append(keys, yamlKey(f))
	}
	return keys
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for _, f := range yamlFields(t) {
		if yamlKey(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// yamlFields are the fields of struct t that are YAML keys, those of an
// inlined struct (yaml:",inline", as home.Agent inlines loop.Agent)
// among them.
func yamlFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if _, opts, _ := strings.Cut(f.Tag.Get("yaml"), ","); opts == "inline" && f.IsExported() {
			out = append(out, yamlFields(f.Type)...)
		} else if yamlKey(f) != "" {
			out = append(out, f)
		}
	}
	return out
}

// yamlKey is the YAML key of a struct field, "" for fields that are not keys.
func yamlKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// suggest picks the valid key closest to an unknown one: within edit
// distance 2, or one a prefix of the other ("max_step", "shell_allow").
func suggest(unknown string, valid []string) string {
	best, bestDist := "", -1
	for _, k := range valid {
		d := levenshtein(unknown, k)
		if d > 2 && !prefixRelated(unknown, k) {
			continue
		}
		if bestDist < 0 || d < bestDist || (d == bestDist && k < best) {
			best, bestDist = k, d
		}
	}
	return best
}

func prefixRelated(a, b string) bool {
	if len(a) < 3 || len(b) < 3 {
		return false
	}
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
