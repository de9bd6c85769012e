package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// toolDocs are the tools' .md files by tool name, from the source tree.
func toolDocs(t *testing.T) map[string]string {
	t.Helper()
	docs := map[string]string{}
	for _, dir := range []string{"../../../tools", "../../../loop"} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(p) != ".md" {
				return err
			}
			b, err := os.ReadFile(p)
			docs[strings.TrimSuffix(d.Name(), ".md")] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return docs
}

// TestToolSchemasMatchDocsAndRequest: every registered tool's
// declaration is its .md (the description starts with the file's text)
// and a JSON Schema of an object whose every argument is explained, in
// the .md or in its own description; the tools declared with tools.Func
// (all but the loop's own, which the turn answers itself) close their
// object; and what the model is sent for each tool, in a real turn's
// request, is that declaration byte for byte (tool_script's description
// adds what it can call).
func TestToolSchemasMatchDocsAndRequest(t *testing.T) {
	docs := toolDocs(t)
	list := allTools(tools.Services{}, listOnly())
	loopOwn := map[string]bool{}
	for _, lt := range loop.Tools() {
		loopOwn[lt.Def().Name] = true
	}
	byName := map[string]tools.Def{}
	for _, tl := range list {
		d := tl.Def()
		byName[d.Name] = d
		md, ok := docs[d.Name]
		if !ok {
			t.Errorf("%s has no %s.md", d.Name, d.Name)
		} else if !strings.HasPrefix(d.Description, strings.TrimRight(md, "\n")) {
			t.Errorf("%s: the description is not its .md", d.Name)
		}
		var sc struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(d.Params, &sc); err != nil || sc.Type != "object" || sc.Properties == nil {
			t.Errorf("%s: params %s are not an object schema (%v)", d.Name, d.Params, err)
			continue
		}
		c := jsonschema.NewCompiler()
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(d.Params))
		if err == nil {
			err = c.AddResource(d.Name+".json", doc)
		}
		if err == nil {
			_, err = c.Compile(d.Name + ".json")
		}
		if err != nil {
			t.Errorf("%s: params are not a valid JSON Schema: %v", d.Name, err)
		}
		for name, raw := range sc.Properties {
			var p struct{ Description string }
			json.Unmarshal(raw, &p)
			if p.Description == "" && !strings.Contains(d.Description, name) {
				t.Errorf("%s: argument %q is explained neither in %s.md nor in its schema", d.Name, name, d.Name)
			}
		}
		for _, r := range sc.Required {
			if _, ok := sc.Properties[r]; !ok {
				t.Errorf("%s: requires %q, which it does not declare", d.Name, r)
			}
		}
		if !loopOwn[d.Name] && (sc.AdditionalProperties == nil || *sc.AdditionalProperties) {
			t.Errorf("%s: arguments it does not declare are allowed", d.Name)
		}
	}

	// What a turn sends: every tool the owner's seat is offered, as declared.
	_, log := eventstest.Start(t)
	reg, err := tools.New(list...)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("You are the test agent."), 0o600)
	os.MkdirAll(filepath.Join(dir, "workspace"), 0o700)
	var sent []llm.Tool
	model := llm.ModelFunc(func(ctx context.Context, req llm.Request) (llm.Reply, error) {
		sent = req.Tools
		return llm.Reply{Text: "done"}, nil
	})
	agent := loop.Agent{ID: "master", Dir: dir, Workspace: filepath.Join(dir, "workspace"), Routes: []string{"fake:a"},
		Tools: reg.Names(), MaxSteps: 4, CostCapUSD: 1, ToolOutputChars: 8000, ApprovalTTL: time.Minute}
	deps := loop.Deps{Models: llm.ModelsFunc(func(string) (llm.Model, error) { return model, nil }), Tools: reg, Clock: loop.WallClock{},
		HomeDir: dir}
	convs := loop.NewConvs(log, nil)
	conv, err := convs.Get(t.Context(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conv.Append(t.Context(), func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.ConversationOpened{Agent: "master", Channel: "web"}, &events.MessageReceived{Channel: "web", Text: "hi"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := loop.NewTurn(agent, deps, conv).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range sent {
		names = append(names, s.Name)
		d, ok := byName[s.Name]
		if !ok {
			t.Errorf("the model is sent %s, which is no registered tool", s.Name)
			continue
		}
		if (s.Description != d.Description && s.Name != loop.ToolScriptTool) || !bytes.Equal(s.Parameters, d.Params) {
			t.Errorf("%s: the model is sent %s, declared %s", s.Name, s.Parameters, d.Params)
		}
	}
	for _, want := range []string{"workspace_read", "workspace_write", "shell_run", "todo_write", "memory_save", "artifact_create", "schedule_create"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s is not declared to the model (sent %v)", want, names)
		}
	}
}
