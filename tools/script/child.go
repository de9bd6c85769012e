package script

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"

	starjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// MemoryLimit is what a script may take beyond the address space the Go
// runtime reserved at start (over a GiB on amd64, most of it never
// touched); a script past it dies instead of growing the server.
const MemoryLimit = 1 << 30

// DefaultSteps bounds a script's computation (Starlark steps).
const DefaultSteps = 50_000_000

// fileOptions are the dialect: Python-like while, set, top-level control,
// global reassignment and recursion on.
var fileOptions = &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}

// Child is `crew __script`: it reads the start line, runs the script and
// writes its requests and the final done line. It returns the exit code.
func Child(in io.Reader, out io.Writer) int {
	limit := vmSize() + MemoryLimit
	syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit})
	debug.SetMemoryLimit(MemoryLimit * 3 / 4)
	c := &child{in: bufio.NewReader(in), out: json.NewEncoder(out)}
	line, err := c.in.ReadBytes('\n')
	var st start
	if err == nil {
		err = json.Unmarshal(line, &st)
	}
	if err != nil {
		c.send(request{Op: "done", Error: "script process: bad start line: " + err.Error()})
		return 2
	}
	c.store = map[string]json.RawMessage{}
	for k, v := range st.Store {
		c.store[k] = v
	}
	steps := st.Steps
	if steps == 0 {
		steps = DefaultSteps
	}
	c.thread = &starlark.Thread{Name: "tool_script", Print: func(_ *starlark.Thread, msg string) { c.send(request{Op: "print", Text: msg}) }}
	c.thread.SetMaxExecutionSteps(steps)
	_, err = starlark.ExecFileOptions(fileOptions, c.thread, "script.star", st.Script, c.predeclared())
	done := request{Op: "done"}
	if err != nil {
		done.Error = c.explain(err)
	} else {
		done.Store, _ = json.Marshal(c.store)
	}
	c.send(done)
	return 0
}

type child struct {
	in     *bufio.Reader
	out    *json.Encoder
	thread *starlark.Thread
	next   int
	store  map[string]json.RawMessage
	stop   string
}

func (c *child) send(r request) {
	if err := c.out.Encode(r); err != nil {
		os.Exit(3) // the server is gone
	}
}

// ask sends a request and waits for its reply; a stop in it ends the
// script with the server's line.
func (c *child) ask(r request) (reply, error) {
	c.next++
	r.ID = c.next
	c.send(r)
	line, err := c.in.ReadBytes('\n')
	if err != nil {
		os.Exit(3)
	}
	var rep reply
	if err := json.Unmarshal(line, &rep); err != nil {
		return rep, fmt.Errorf("script process: bad reply: %v", err)
	}
	if rep.Stop != "" {
		c.stop = rep.Stop
		c.thread.Cancel(rep.Stop)
		return rep, errors.New(rep.Stop)
	}
	return rep, nil
}

func (c *child) predeclared() starlark.StringDict {
	b := func(name string, fn func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error)) starlark.Value {
		return starlark.NewBuiltin(name, fn)
	}
	return starlark.StringDict{
		"json": starjson.Module,
		"tools": &starlarkstruct.Module{Name: "tools", Members: starlark.StringDict{
			"call":     b("tools.call", c.call),
			"batch":    b("tools.batch", c.batch),
			"names":    b("tools.names", c.names),
			"search":   b("tools.search", c.search),
			"describe": b("tools.describe", c.describe),
			"delegate": b("tools.delegate", c.delegate),
		}},
		"llm": &starlarkstruct.Module{Name: "llm", Members: starlark.StringDict{
			"classify":  b("llm.classify", c.classify),
			"summarise": b("llm.summarise", c.summarise),
			"summarize": b("llm.summarize", c.summarise),
		}},
		"store": &starlarkstruct.Module{Name: "store", Members: starlark.StringDict{
			"get": b("store.get", c.storeGet),
			"set": b("store.set", c.storeSet),
		}},
		"sum":        b("sum", builtinSum),
		"round":      b("round", builtinRound),
		"isinstance": b("isinstance", builtinIsinstance),
	}
}

// call is tools.call(name, args) or tools.call(name, key=value, …).
func (c *child) call(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) < 1 || len(args) > 2 {
		return nil, fmt.Errorf("%s: want tools.call(name, {args}) or tools.call(name, key=value, ...)", fn.Name())
	}
	spec, err := callSpec(fn.Name(), args[0], argOrNone(args, 1), kwargs)
	if err != nil {
		return nil, err
	}
	rep, err := c.ask(request{Op: "call", Calls: []CallSpec{spec}})
	if err != nil {
		return nil, err
	}
	if len(rep.Results) != 1 {
		return nil, fmt.Errorf("%s: the server gave %d results", fn.Name(), len(rep.Results))
	}
	return fromValue(rep.Results[0]), nil
}

// delegate is tools.delegate(agent, task): a call of the tool delegate,
// which the server allows only in gated mode to an agent holding it.
func (c *child) delegate(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var agent, task string
	if err := starlark.UnpackArgs(fn.Name(), args, kwargs, "agent", &agent, "task", &task); err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(map[string]string{"agent": agent, "task": task})
	rep, err := c.ask(request{Op: "call", Calls: []CallSpec{{Name: "delegate", Args: raw}}})
	if err != nil {
		return nil, err
	}
	if len(rep.Results) != 1 {
		return nil, fmt.Errorf("%s: the server gave %d results", fn.Name(), len(rep.Results))
	}
	return fromValue(rep.Results[0]), nil
}

func argOrNone(args starlark.Tuple, i int) starlark.Value {
	if i < len(args) {
		return args[i]
	}
	return starlark.None
}

func callSpec(fn string, name, args starlark.Value, kwargs []starlark.Tuple) (CallSpec, error) {
	n, ok := starlark.AsString(name)
	if !ok {
		return CallSpec{}, fmt.Errorf("%s: the tool name must be a string, got %s", fn, name.Type())
	}
	m := map[string]any{}
	if args != starlark.None {
		d, ok := args.(*starlark.Dict)
		if !ok {
			return CallSpec{}, fmt.Errorf("%s: the arguments of %s must be a dict, got %s", fn, n, args.Type())
		}
		v, err := toGo(d)
		if err != nil {
			return CallSpec{}, fmt.Errorf("%s: %v", fn, err)
		}
		m = v.(map[string]any)
	}
	for _, kv := range kwargs {
		k, _ := starlark.AsString(kv[0])
		v, err := toGo(kv[1])
		if err != nil {
			return CallSpec{}, fmt.Errorf("%s: %v", fn, err)
		}
		m[k] = v
	}
	raw, _ := json.Marshal(m)
	return CallSpec{Name: n, Args: raw}, nil
}

// batch is tools.batch([(name, {args}), …]) or a list of
// {"name": …, "args": …} dicts.
func (c *child) batch(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var list starlark.Iterable
	if err := starlark.UnpackPositionalArgs(fn.Name(), args, kwargs, 1, &list); err != nil {
		return nil, err
	}
	var specs []CallSpec
	it := list.Iterate()
	defer it.Done()
	var x starlark.Value
	for it.Next(&x) {
		var spec CallSpec
		var err error
		switch v := x.(type) {
		case starlark.Tuple:
			if len(v) != 2 {
				return nil, fmt.Errorf("%s: each call is (name, {args})", fn.Name())
			}
			spec, err = callSpec(fn.Name(), v[0], v[1], nil)
		case *starlark.List:
			if v.Len() != 2 {
				return nil, fmt.Errorf("%s: each call is (name, {args})", fn.Name())
			}
			spec, err = callSpec(fn.Name(), v.Index(0), v.Index(1), nil)
		case *starlark.Dict:
			name, _, _ := v.Get(starlark.String("name"))
			a, found, _ := v.Get(starlark.String("args"))
			if name == nil {
				return nil, fmt.Errorf(`%s: a dict call needs "name"`, fn.Name())
			}
			if !found {
				a = starlark.None
			}
			spec, err = callSpec(fn.Name(), name, a, nil)
		default:
			return nil, fmt.Errorf("%s: each call is (name, {args}), got %s", fn.Name(), x.Type())
		}
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	rep, err := c.ask(request{Op: "call", Calls: specs, Batch: true})
	if err != nil {
		return nil, err
	}
	out := make([]starlark.Value, len(rep.Results))
	for i, r := range rep.Results {
		out[i] = fromValue(r)
	}
	return starlark.NewList(out), nil
}

func (c *child) lookup(op, fn string, args starlark.Tuple, kwargs []starlark.Tuple, arg string) (starlark.Value, error) {
	r := request{Op: op}
	switch op {
	case "search":
		if err := starlark.UnpackPositionalArgs(fn, args, kwargs, 1, &r.Query); err != nil {
			return nil, err
		}
	case "describe":
		if err := starlark.UnpackPositionalArgs(fn, args, kwargs, 1, &r.Name); err != nil {
			return nil, err
		}
	default:
		if err := starlark.UnpackPositionalArgs(fn, args, kwargs, 0); err != nil {
			return nil, err
		}
	}
	rep, err := c.ask(r)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(rep.Value, &v); err != nil {
		return nil, err
	}
	return fromGo(v), nil
}

func (c *child) names(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return c.lookup("names", fn.Name(), args, kwargs, "")
}

func (c *child) search(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return c.lookup("search", fn.Name(), args, kwargs, "")
}

func (c *child) describe(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return c.lookup("describe", fn.Name(), args, kwargs, "")
}

func (c *child) classify(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var text string
	var labels *starlark.List
	if err := starlark.UnpackArgs(fn.Name(), args, kwargs, "text", &text, "labels", &labels); err != nil {
		return nil, err
	}
	ask := &LLMAsk{Kind: "classify", Text: text}
	for i := 0; i < labels.Len(); i++ {
		s, ok := starlark.AsString(labels.Index(i))
		if !ok {
			return nil, fmt.Errorf("%s: labels must be strings", fn.Name())
		}
		ask.Labels = append(ask.Labels, s)
	}
	return c.askLLM(ask)
}

func (c *child) summarise(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var text string
	maxChars := 500
	if err := starlark.UnpackArgs(fn.Name(), args, kwargs, "text", &text, "max_chars?", &maxChars); err != nil {
		return nil, err
	}
	return c.askLLM(&LLMAsk{Kind: "summarise", Text: text, MaxChars: maxChars})
}

func (c *child) askLLM(a *LLMAsk) (starlark.Value, error) {
	rep, err := c.ask(request{Op: "llm", Calls: nil, LLM: a})
	if err != nil {
		return nil, err
	}
	if len(rep.Results) != 1 {
		return nil, errors.New("llm: no answer")
	}
	return fromValue(rep.Results[0]), nil
}

func (c *child) storeGet(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var key string
	var def starlark.Value = starlark.None
	if err := starlark.UnpackPositionalArgs(fn.Name(), args, kwargs, 1, &key, &def); err != nil {
		return nil, err
	}
	raw, ok := c.store[key]
	if !ok {
		return def, nil
	}
	var v any
	json.Unmarshal(raw, &v)
	return fromGo(v), nil
}

func (c *child) storeSet(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var key string
	var v starlark.Value
	if err := starlark.UnpackPositionalArgs(fn.Name(), args, kwargs, 2, &key, &v); err != nil {
		return nil, err
	}
	g, err := toGo(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", fn.Name(), err)
	}
	raw, _ := json.Marshal(g)
	c.store[key] = raw
	return starlark.None, nil
}

// explain is a script error as the model reads it: a stop line as it is,
// a syntax error with line:col and a hint for the usual Python habits.
func (c *child) explain(err error) string {
	if c.stop != "" {
		return c.stop
	}
	var se syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("syntax error at line %d:%d: %s%s", se.Pos.Line, se.Pos.Col, se.Msg, hint(se.Msg))
	}
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		msg := ee.Backtrace()
		return "script error: " + msg + hint(ee.Msg)
	}
	return "script error: " + err.Error() + hint(err.Error())
}

// hint names the Starlark way for what a message shows the script tried.
func hint(msg string) string {
	switch {
	case strings.Contains(msg, "got string literal") || strings.Contains(msg, `f"`):
		return `. Hint: no f-strings; write "%s" % x or "{}".format(x).`
	case strings.Contains(msg, "try") || strings.Contains(msg, "except"):
		return `. Hint: no try/except; tools.call returns {"error": ...} on failure, check r.get("error").`
	case strings.Contains(msg, "got is,"):
		return ". Hint: write x == None, not x is None."
	case strings.Contains(msg, "import"):
		return ". Hint: no import; json is predeclared (json.encode, json.decode)."
	case strings.Contains(msg, "class"):
		return ". Hint: no classes; use dicts and functions."
	case strings.Contains(msg, "load"):
		return ". Hint: load is reserved; use store.get(key, default) and store.set(key, value)."
	case strings.Contains(msg, "cancelled") || strings.Contains(msg, "too many steps"):
		return ". The script computed too long and was stopped."
	}
	return ""
}

// toGo converts a Starlark value to JSON-shaped Go.
func toGo(v starlark.Value) (any, error) {
	switch v := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(v), nil
	case starlark.Int:
		if i, ok := v.Int64(); ok {
			return i, nil
		}
		f, _ := starlark.AsFloat(v)
		return f, nil
	case starlark.Float:
		if math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
			return nil, fmt.Errorf("%v is not a JSON number", v)
		}
		return float64(v), nil
	case starlark.String:
		return string(v), nil
	case *starlark.List, starlark.Tuple:
		var out []any
		it := v.(starlark.Iterable).Iterate()
		defer it.Done()
		var x starlark.Value
		for it.Next(&x) {
			g, err := toGo(x)
			if err != nil {
				return nil, err
			}
			out = append(out, g)
		}
		if out == nil {
			out = []any{}
		}
		return out, nil
	case *starlark.Dict:
		out := map[string]any{}
		for _, kv := range v.Items() {
			k, ok := starlark.AsString(kv[0])
			if !ok {
				return nil, fmt.Errorf("dict keys must be strings, got %s", kv[0].Type())
			}
			g, err := toGo(kv[1])
			if err != nil {
				return nil, err
			}
			out[k] = g
		}
		return out, nil
	}
	return nil, fmt.Errorf("a %s cannot be sent as JSON", v.Type())
}

// fromGo converts decoded JSON to Starlark.
func fromGo(v any) starlark.Value {
	switch v := v.(type) {
	case nil:
		return starlark.None
	case bool:
		return starlark.Bool(v)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return starlark.MakeInt64(int64(v))
		}
		return starlark.Float(v)
	case string:
		return starlark.String(v)
	case []any:
		out := make([]starlark.Value, len(v))
		for i, x := range v {
			out[i] = fromGo(x)
		}
		return starlark.NewList(out)
	case map[string]any:
		d := starlark.NewDict(len(v))
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			d.SetKey(starlark.String(k), fromGo(v[k]))
		}
		return d
	}
	return starlark.String(fmt.Sprint(v))
}

func fromValue(r Value) starlark.Value {
	d := starlark.NewDict(1)
	if r.Error != nil {
		d.SetKey(starlark.String("error"), starlark.String(*r.Error))
	} else if r.Output != nil {
		d.SetKey(starlark.String("output"), starlark.String(*r.Output))
	}
	return d
}

func builtinSum(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var it starlark.Iterable
	var start starlark.Value = starlark.MakeInt(0)
	if err := starlark.UnpackPositionalArgs(fn.Name(), args, kwargs, 1, &it, &start); err != nil {
		return nil, err
	}
	acc := start
	iter := it.Iterate()
	defer iter.Done()
	var x starlark.Value
	for iter.Next(&x) {
		var err error
		if acc, err = starlark.Binary(syntax.PLUS, acc, x); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

func builtinRound(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x starlark.Value
	digits := 0
	if err := starlark.UnpackPositionalArgs(fn.Name(), args, kwargs, 1, &x, &digits); err != nil {
		return nil, err
	}
	f, ok := starlark.AsFloat(x)
	if !ok {
		return nil, fmt.Errorf("round: want a number, got %s", x.Type())
	}
	p := math.Pow(10, float64(digits))
	r := math.RoundToEven(f*p) / p
	if digits == 0 {
		return starlark.MakeInt64(int64(r)), nil
	}
	return starlark.Float(r), nil
}

func builtinIsinstance(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x, t starlark.Value
	if err := starlark.UnpackPositionalArgs(fn.Name(), args, kwargs, 2, &x, &t); err != nil {
		return nil, err
	}
	name := t.String()
	if b, ok := t.(*starlark.Builtin); ok {
		name = b.Name()
	}
	if s, ok := starlark.AsString(t); ok {
		name = s
	}
	return starlark.Bool(x.Type() == name), nil
}

// vmSize is the process's address space now, in bytes.
func vmSize() uint64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmSize:"); ok {
			var kb uint64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb << 10
		}
	}
	return 2 << 30
}
