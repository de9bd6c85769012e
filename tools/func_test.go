package tools

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type probeItem struct {
	Kind string `json:"kind" schema:"enum=a|b"`
}

type probeArgs struct {
	Path  string      `json:"path" jsonschema:"Where, relative to the workspace."`
	Name  string      `json:"name,omitempty" schema:"maxLength=64,pattern=^[a-z]{1,64}$"`
	Count int         `json:"count,omitempty" schema:"minimum=1,maximum=9"`
	Tags  []string    `json:"tags,omitempty" schema:"enum=x|y,maxItems=2"`
	Text  *string     `json:"text,omitempty"`
	Items []probeItem `json:"items,omitempty"`
}

// probe is a typed tool with every hook, recording what its hooks saw.
type probe struct{ seen *[]string }

func (probe) Def() Def            { return Def{Name: "probe", Description: "Probe."} }
func (probe) NeedsApproval() bool { return true }
func (probe) ReadOnly() bool      { return true }
func (p probe) Check(env Env, a probeArgs) error {
	*p.seen = append(*p.seen, "check "+a.Path)
	return nil
}
func (p probe) AskWhen(env Env, a probeArgs) string {
	*p.seen = append(*p.seen, "ask "+a.Path)
	return "asks " + a.Path
}
func (p probe) AllowWhen(env Env, a probeArgs) bool {
	*p.seen = append(*p.seen, "allow "+a.Path)
	return a.Count == 1
}
func (p probe) Run(ctx context.Context, env Env, a probeArgs) (Result, error) {
	return Result{Output: a.Path + " " + strings.Join(a.Tags, ",")}, nil
}

// TestSchemaDerivedFromArgs: a tool's schema is its arguments' struct —
// json names, omitempty optional, the jsonschema tag the description, the
// schema tag's bounds and enums (on a slice, the items'), nested structs
// closed too, a nullable type declared plain.
func TestSchemaDerivedFromArgs(t *testing.T) {
	got, err := Schema[probeArgs]()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","additionalProperties":false,"required":["path"],"properties":{
		"path":{"type":"string","description":"Where, relative to the workspace."},
		"name":{"type":"string","maxLength":64,"pattern":"^[a-z]{1,64}$"},
		"count":{"type":"integer","minimum":1,"maximum":9},
		"tags":{"type":"array","maxItems":2,"items":{"type":"string","enum":["x","y"]}},
		"text":{"type":"string"},
		"items":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["kind"],
			"properties":{"kind":{"type":"string","enum":["a","b"]}}}}}}`
	var g, w any
	json.Unmarshal(got, &g)
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("schema\n%s\nwant\n%s", got, want)
	}
	if _, err := Schema[struct {
		N int `json:"n" schema:"minimum=one"`
	}](); err == nil || !strings.Contains(err.Error(), "not a number") {
		t.Errorf("a bad schema tag: %v", err)
	}
	if _, err := Schema[struct {
		N int `json:"n" schema:"colour=red"`
	}](); err == nil || !strings.Contains(err.Error(), "unknown schema tag key") {
		t.Errorf("an unknown schema tag: %v", err)
	}
	if _, err := Schema[string](); err == nil {
		t.Error("a non-struct has a schema")
	}
	if got := MustSchema[struct{}](); string(got) != `{"type":"object","properties":{},"additionalProperties":false}` {
		t.Errorf("no arguments: %s", got)
	}
}

// TestFuncDecodesOnceForEveryHook: Func declares the derived schema, and
// Run and every hook get the decoded arguments; arguments that do not
// decode are refused by Check and Run with the tool, the field and what
// was wrong, and never ask nor run as routine.
func TestFuncDecodesOnceForEveryHook(t *testing.T) {
	var seen []string
	f := NewFunc[probeArgs](probe{&seen})
	if string(f.Def().Params) != string(MustSchema[probeArgs]()) || f.Def().Description != "Probe." {
		t.Errorf("def %+v", f.Def())
	}
	var tl Tool = f
	ok := json.RawMessage(`{"path":"a.txt","count":1,"tags":["x"]}`)
	if err := Check(tl, Env{}, ok); err != nil {
		t.Errorf("check: %v", err)
	}
	if r := AskReason(tl, Env{}, ok); r != "asks a.txt" {
		t.Errorf("ask reason %q", r)
	}
	if !Routine(tl, Env{}, ok) || !NeedsApproval(tl) || !ReadOnly(tl) || !HasAsker(tl) || !HasAllower(tl) {
		t.Error("a hook is not forwarded")
	}
	if res, err := tl.Run(t.Context(), Env{}, ok); err != nil || res.Output != "a.txt x" {
		t.Errorf("run %+v %v", res, err)
	}
	if want := []string{"check a.txt", "ask a.txt", "allow a.txt"}; !reflect.DeepEqual(seen, want) {
		t.Errorf("hooks saw %q, want %q", seen, want)
	}
	seen = nil
	for args, want := range map[string]string{
		`{"path":"a","cuont":2}`:   `invalid arguments for probe: json: unknown field "cuont"`,
		`{"path":"a","count":"2"}`: `invalid arguments for probe: json: cannot unmarshal string into Go struct field probeArgs.count of type int`,
		`{"path":"a"} {}`:          `invalid arguments for probe: trailing data after the JSON object`,
		`["a"]`:                    `invalid arguments for probe: json: cannot unmarshal array into Go value of type tools.probeArgs`,
	} {
		raw := json.RawMessage(args)
		if err := Check(tl, Env{}, raw); err == nil || err.Error() != want {
			t.Errorf("check %s: %v, want %s", args, err, want)
		}
		if res, err := tl.Run(t.Context(), Env{}, raw); err != nil || !res.IsError || res.Output != want {
			t.Errorf("run %s: %+v %v", args, res, err)
		}
		if AskReason(tl, Env{}, raw) != "" || Routine(tl, Env{}, raw) {
			t.Errorf("%s asks or is routine", args)
		}
	}
	if len(seen) != 0 {
		t.Errorf("a hook saw arguments that do not decode: %q", seen)
	}
	// Empty and null arguments are {}: path is then missing.
	if err := Check(tl, Env{}, nil); err == nil || err.Error() != `invalid arguments for probe: "path" is required` {
		t.Errorf("no arguments: %v", err)
	}
}

// rawHook has a hook on raw arguments, which Func would never ask.
type rawHook struct{ probe }

func (rawHook) AskWhen(env Env, args json.RawMessage) string { return "always" }

type declared struct{ probe }

func (declared) Def() Def { return Def{Name: "declared", Params: json.RawMessage(`{}`)} }

// TestFuncRefusesHandWrittenParts: a typed tool that declares Params or
// keeps a hook on raw arguments is a programming error NewFunc reports.
func TestFuncRefusesHandWrittenParts(t *testing.T) {
	for name, build := range map[string]func(){
		"raw hook": func() { NewFunc[probeArgs](rawHook{probe{new([]string)}}) },
		"params":   func() { NewFunc[probeArgs](declared{probe{new([]string)}}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: NewFunc did not panic", name)
				}
			}()
			build()
		}()
	}
}
