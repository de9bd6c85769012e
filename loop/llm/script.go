package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// scriptReply is one parsed entry of a script.
type scriptReply struct {
	text        string
	calls       []scriptCall
	err         error
	delay       time.Duration
	input       int
	output      int
	cost        float64
	costUnknown bool
	finish      string // finish_reason; "" is stop (or tool_calls)
}

type scriptCall struct {
	id, name, args string
}

// LoadScript reads and checks a fake:script file.
func LoadScript(path string) (*ScriptModel, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fake:script: %w", err)
	}
	return ParseScript(path, data)
}

// ParseScript checks a script; name is the file name used in messages.
// Every error reads "name:line:col: message".
func ParseScript(name string, data []byte) (*ScriptModel, error) {
	p := scriptParser{file: name}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, p.goccy(err)
	}
	if len(f.Docs) > 1 {
		tk := f.Docs[1].Start // the "---"
		if tk == nil {
			tk = f.Docs[1].GetToken()
		}
		return nil, p.at(tk, "found %d YAML documents, want one", len(f.Docs))
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return nil, fmt.Errorf("%s:1:1: script has no replies (want a list)", name)
	}
	seq, ok := f.Docs[0].Body.(*ast.SequenceNode)
	if !ok {
		return nil, p.at(f.Docs[0].Body.GetToken(), "want a list of replies, found %s", f.Docs[0].Body.Type())
	}
	m := &ScriptModel{file: name}
	for _, item := range seq.Values {
		r, err := p.reply(item)
		if err != nil {
			return nil, err
		}
		m.replies = append(m.replies, r)
	}
	if len(m.replies) == 0 {
		return nil, p.at(seq.GetToken(), "script has no replies")
	}
	return m, nil
}

type scriptParser struct{ file string }

func (p scriptParser) at(tk *token.Token, format string, args ...any) error {
	line, col := 1, 1
	if tk != nil && tk.Position != nil {
		line, col = tk.Position.Line, tk.Position.Column
	}
	return fmt.Errorf("%s:%d:%d: %s", p.file, line, col, fmt.Sprintf(format, args...))
}

// goccy turns goccy's multi-line error into one line with its position.
func (p scriptParser) goccy(err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) {
		return p.at(ye.GetToken(), "%s", ye.GetMessage())
	}
	return fmt.Errorf("%s:1:1: %v", p.file, err)
}

func (p scriptParser) decode(n ast.Node, dst any) error {
	if err := yaml.NodeToValue(n, dst, yaml.Strict()); err != nil {
		return p.goccy(err)
	}
	return nil
}

func mappingValues(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch n := n.(type) {
	case *ast.MappingNode:
		return n.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{n}, true
	}
	return nil, false
}

func (p scriptParser) reply(item ast.Node) (scriptReply, error) {
	var r scriptReply
	fields, ok := mappingValues(item)
	if !ok {
		return r, p.at(item.GetToken(), "a reply is a mapping with text, tool_calls or error, found %s", item.Type())
	}
	has := false
	for _, f := range fields {
		key, v := f.Key.String(), f.Value
		switch key {
		case "text":
			if err := p.decode(v, &r.text); err != nil {
				return r, err
			}
			has = true
		case "tool_calls":
			calls, err := p.toolCalls(v)
			if err != nil {
				return r, err
			}
			r.calls, has = calls, true
		case "error":
			err := p.scriptedError(v)
			if _, isHTTP := err.(*Error); !isHTTP {
				return r, err
			}
			r.err, has = err, true
		case "finish":
			if err := p.decode(v, &r.finish); err != nil {
				return r, err
			}
			if r.finish != "stop" && r.finish != "length" {
				return r, p.at(v.GetToken(), "finish %q: want stop or length", r.finish)
			}
		case "retry_after":
			var s string
			if err := p.decode(v, &s); err != nil {
				return r, err
			}
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				return r, p.at(v.GetToken(), "retry_after %q: want a duration such as 2s", s)
			}
			ra := d
			defer func() {
				if e, ok := r.err.(*Error); ok && e.Status == http.StatusTooManyRequests {
					e.RetryAfter = ra
				}
			}()
		case "delay":
			var s string
			if err := p.decode(v, &s); err != nil {
				return r, err
			}
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				return r, p.at(v.GetToken(), "delay %q: want a duration such as 200ms or 2s", s)
			}
			r.delay = d
		case "usage":
			var u struct {
				Input       int      `yaml:"input"`
				Output      int      `yaml:"output"`
				CostUSD     *float64 `yaml:"cost_usd"`
				CostUnknown bool     `yaml:"cost_unknown"`
			}
			if err := p.decode(v, &u); err != nil {
				return r, err
			}
			if u.Input < 0 || u.Output < 0 || (u.CostUSD != nil && *u.CostUSD < 0) {
				return r, p.at(v.GetToken(), "usage: tokens and cost must not be negative")
			}
			if u.CostUnknown && u.CostUSD != nil {
				return r, p.at(v.GetToken(), "usage: cost_usd and cost_unknown exclude each other")
			}
			r.input, r.output, r.costUnknown = u.Input, u.Output, u.CostUnknown
			if u.CostUSD != nil {
				r.cost = *u.CostUSD
			}
		default:
			return r, p.at(f.Key.GetToken(), "unknown field %q (want text, tool_calls, error, delay, usage, finish or retry_after)", key)
		}
	}
	if !has {
		return r, p.at(item.GetToken(), "a reply needs text, tool_calls or error")
	}
	return r, nil
}

func (p scriptParser) toolCalls(v ast.Node) ([]scriptCall, error) {
	seq, ok := v.(*ast.SequenceNode)
	if !ok {
		return nil, p.at(v.GetToken(), "tool_calls: want a list, found %s", v.Type())
	}
	var out []scriptCall
	for _, item := range seq.Values {
		var c struct {
			Name      string `yaml:"name"`
			ID        string `yaml:"id"`
			Arguments any    `yaml:"arguments"`
		}
		if err := p.decode(item, &c); err != nil {
			return nil, err
		}
		if c.Name == "" {
			return nil, p.at(item.GetToken(), "tool call without a name")
		}
		var args string
		switch a := c.Arguments.(type) {
		case nil:
			args = "{}"
		case string:
			args = a // verbatim, so a script can send broken JSON on purpose
		default:
			b, err := json.Marshal(jsonable(a))
			if err != nil {
				return nil, p.at(item.GetToken(), "tool call %s: arguments: %v", c.Name, err)
			}
			args = string(b)
		}
		out = append(out, scriptCall{id: c.ID, name: c.Name, args: args})
	}
	return out, nil
}

// jsonable turns YAML maps with non-string keys into JSON objects.
func jsonable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = jsonable(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[fmt.Sprint(k)] = jsonable(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = jsonable(e)
		}
		return out
	}
	return v
}

// scriptedError builds the classified error an `error:` entry returns. A
// non-*Error result is a problem with the script itself.
func (p scriptParser) scriptedError(v ast.Node) error {
	var raw any
	if err := p.decode(v, &raw); err != nil {
		return err
	}
	s := strings.TrimSpace(fmt.Sprint(raw))
	if raw == nil || s == "" {
		return p.at(v.GetToken(), "error: want 429, 500, timeout, context_too_long or a message")
	}
	if status, err := strconv.Atoi(s); err == nil {
		if status < 400 || status > 599 {
			return p.at(v.GetToken(), "error: status %d: want a 4xx or 5xx", status)
		}
		return &Error{Kind: classify(status, ""), Provider: ProviderFake, Status: status, Body: "scripted " + http.StatusText(status)}
	}
	switch s {
	case "timeout":
		return &Error{Kind: ErrUnavailable, Provider: ProviderFake, Body: "scripted timeout"}
	case "context_too_long":
		return &Error{Kind: ErrContextTooLong, Provider: ProviderFake, Status: http.StatusBadRequest, Body: "scripted context_too_long"}
	}
	return &Error{Kind: classify(0, s), Provider: ProviderFake, Body: s}
}
