package script

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/tools/shell/shelltest"
)

// The test binary is also the script child, as the crew binary is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "__script" {
		os.Exit(Child(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// testHost answers calls from a table of tools; "write" is not read-only.
type testHost struct {
	mu       sync.Mutex
	running  int
	maxAtOnc int
	ran      []string
	nested   []Nested
	spilled  map[int]string
	stopOn   string // a tool whose call needs a human
	wait     chan struct{}
	started  chan struct{}
	fastDone chan struct{} // closed when the call "fast" is recorded
}

func (h *testHost) Vet(name string, _ json.RawMessage) (string, string) {
	switch {
	case name == h.stopOn && name != "":
		return "", "STOP: " + name + " needs the owner's approval; call it directly, not from a script."
	case name == "write":
		return "write cannot be called from a script (it changes things); call it directly.", ""
	case name == "unknown":
		return `unknown tool "unknown"`, ""
	}
	return "", ""
}

func (h *testHost) Run(ctx context.Context, _ int, name string, args json.RawMessage) (string, bool, error) {
	h.mu.Lock()
	h.running++
	h.maxAtOnc = max(h.maxAtOnc, h.running)
	h.ran = append(h.ran, name+string(args))
	h.mu.Unlock()
	defer func() { h.mu.Lock(); h.running--; h.mu.Unlock() }()
	switch name {
	case "slow":
		var a struct{ MS int }
		json.Unmarshal(args, &a)
		time.Sleep(time.Duration(a.MS) * time.Millisecond)
		return fmt.Sprintf("slept %d", a.MS), false, nil
	case "fails":
		return "no such file", true, nil
	case "big":
		return strings.Repeat("x", AnswerChars+500), false, nil
	case "waits": // ends once the call "fast" of its batch is recorded
		select {
		case <-h.fastDone:
			return "saw fast recorded", false, nil
		case <-time.After(20 * time.Second):
			return "fast was not recorded while this call ran", true, nil
		case <-ctx.Done():
			return "", false, ctx.Err()
		}
	case "block":
		close(h.started)
		<-ctx.Done()
		return "", false, ctx.Err()
	}
	return "read " + string(args), false, nil
}

func (h *testHost) Ask(_ context.Context, a LLMAsk) (string, bool, *float64, string, error) {
	c := 0.001
	if a.Kind == "classify" {
		return a.Labels[len(a.Labels)-1], false, &c, "", nil
	}
	return a.Text[:min(len(a.Text), a.MaxChars)], false, &c, "", nil
}

func (h *testHost) Names() []string { return []string{"read", "slow", "write"} }
func (h *testHost) Search(q string) []map[string]any {
	return []map[string]any{{"name": "read", "description": "reads " + q}}
}
func (h *testHost) Describe(name string) (map[string]any, bool) {
	return map[string]any{"name": name, "parameters": map[string]any{"type": "object"}}, name == "read"
}
func (h *testHost) Nested(_ context.Context, c Nested) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nested = append(h.nested, c)
	if c.Tool == "fast" && h.fastDone != nil {
		close(h.fastDone)
	}
	return nil
}
func (h *testHost) Spill(n int, full string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.spilled == nil {
		h.spilled = map[int]string{}
	}
	h.spilled[n] = full
	return fmt.Sprintf("call_x.%d", n), nil
}

func runScript(t *testing.T, h *testHost, src string, store map[string]json.RawMessage) *Outcome {
	t.Helper()
	out, err := Run(t.Context(), Config{Exe: os.Args[0], Args: []string{"__script"}, Sandbox: shelltest.New(t), Script: src, Store: store, TurnLeft: 120}, h)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// R-SCR: tools.call takes a dict or keywords; results are values, a
// failure {"error": …} the script goes on after.
func TestScriptCallsAndFailuresAreValues(t *testing.T) {
	h := &testHost{}
	out := runScript(t, h, `
a = tools.call("read", {"path": "a.txt"})
b = tools.call("read", path="b.txt")
c = tools.call("fails", {})
if c.get("error") != None:
    print("failed:", c["error"])
print(a["output"], b["output"])
`, nil)
	if out.Error != "" {
		t.Fatal(out.Error)
	}
	if !strings.Contains(out.Printed, "failed: no such file") || !strings.Contains(out.Printed, `read {"path":"a.txt"} read {"path":"b.txt"}`) {
		t.Errorf("printed %q", out.Printed)
	}
	if len(out.Calls) != 3 || !out.Calls[2].IsError || len(h.nested) != 3 {
		t.Errorf("calls %+v nested %d", out.Calls, len(h.nested))
	}
	if out.PrintedChars != len([]rune(out.Printed)) || out.ReceivedChars == 0 {
		t.Errorf("chars printed %d received %d", out.PrintedChars, out.ReceivedChars)
	}
}

// R-SCR: a call to a tool the script may not call comes back as an error
// value saying so; the script goes on.
func TestScriptDisallowedCallIsAnErrorValue(t *testing.T) {
	h := &testHost{}
	out := runScript(t, h, `
r = tools.call("write", {"path": "x"})
print(r["error"])
print("went on")
`, nil)
	if out.Error != "" || !strings.Contains(out.Printed, "cannot be called from a script") || !strings.Contains(out.Printed, "went on") || len(h.ran) != 0 {
		t.Errorf("out %+v ran %v", out, h.ran)
	}
}

// R-SCR: tools.batch runs at most 4 at once and answers in written order.
func TestScriptBatchAtMostFourAtOnceInWrittenOrder(t *testing.T) {
	h := &testHost{}
	out := runScript(t, h, `
rs = tools.batch([("slow", {"MS": 60}), ("slow", {"MS": 10}), ("slow", {"MS": 40}), ("slow", {"MS": 5}), ("slow", {"MS": 30}), {"name": "slow", "args": {"MS": 1}}])
print(",".join([r["output"] for r in rs]))
`, nil)
	if out.Error != "" {
		t.Fatal(out.Error)
	}
	if out.Printed != "slept 60,slept 10,slept 40,slept 5,slept 30,slept 1" {
		t.Errorf("printed %q", out.Printed)
	}
	if h.maxAtOnc > Concurrency || h.maxAtOnc < 2 {
		t.Errorf("at most %d at once, want 2..%d", h.maxAtOnc, Concurrency)
	}
	for i, n := range out.Calls {
		if n.N != i+1 || n.Output != strings.Split(out.Printed, ",")[i] {
			t.Errorf("call %d numbered %d gave %q", i, n.N, n.Output)
		}
	}
	if len(h.nested) != 6 {
		t.Errorf("%d recorded, want 6", len(h.nested))
	}
}

// R-SCR: each call of a batch is recorded (nested_call) as soon as it
// ends, not when the batch does; the results still come in written order.
func TestScriptBatchCallRecordedAsItEnds(t *testing.T) {
	h := &testHost{fastDone: make(chan struct{})}
	out := runScript(t, h, `
rs = tools.batch([("waits", {}), ("fast", {})])
print(rs[0]["output"], "|", rs[1]["output"])
`, nil)
	if out.Error != "" || out.Printed != `saw fast recorded | read {}` {
		t.Fatalf("printed %q error %q", out.Printed, out.Error)
	}
	if len(h.nested) != 2 || h.nested[0].Tool != "fast" || h.nested[0].N != 2 || h.nested[1].Tool != "waits" || h.nested[1].N != 1 {
		t.Errorf("recorded %+v, want fast (call 2) before waits (call 1)", h.nested)
	}
	if len(out.Calls) != 2 || out.Calls[0].Tool != "waits" || out.Calls[1].Tool != "fast" {
		t.Errorf("result calls %+v, want written order", out.Calls)
	}
}

// R-SCR: a batch of more than 10 runs none; a batch holding one call the
// script may not make runs none.
func TestScriptBatchOverTenOrWithDisallowedCallRunsNone(t *testing.T) {
	h := &testHost{}
	out := runScript(t, h, `
rs = tools.batch([("read", {})] * 11)
print(rs[0]["error"])
rs = tools.batch([("read", {}), ("write", {}), ("read", {})])
print(rs[0]["error"])
print(rs[1]["error"])
`, nil)
	if len(h.ran) != 0 {
		t.Errorf("ran %v, want nothing", h.ran)
	}
	if !strings.Contains(out.Printed, "at most 10 calls") || !strings.Contains(out.Printed, "the batch held a call a script cannot make (write)") {
		t.Errorf("printed %q", out.Printed)
	}
}

// R-SCR: the 26th call stops the script, its result ending with the
// limit line; every call of the 25 counted (model questions too).
func TestScriptStopsAtTwentyFiveCalls(t *testing.T) {
	h := &testHost{}
	out := runScript(t, h, `
llm.classify("is it good?", ["no", "yes"])
for i in range(30):
    tools.call("read", {"i": i})
print("never")
`, nil)
	if len(h.ran) != 24 || len(out.Calls) != 25 || !out.Limited || out.Calls[0].Kind != "llm" {
		t.Errorf("ran %d calls %d limited %v", len(h.ran), len(out.Calls), out.Limited)
	}
	if out.Error != "STOP: the script stopped at the limit of 25 calls." || strings.Contains(out.Printed, "never") {
		t.Errorf("error %q printed %q", out.Error, out.Printed)
	}
}

// R-SCR: the turn's share (max_steps × 10) stops the script and says so.
func TestScriptTurnCapStops(t *testing.T) {
	h := &testHost{}
	out, err := Run(t.Context(), Config{Exe: os.Args[0], Args: []string{"__script"}, Sandbox: shelltest.New(t), TurnLeft: 3, Script: `
for i in range(5):
    tools.call("read", {})
`}, h)
	if err != nil {
		t.Fatal(err)
	}
	if !out.TurnCap || len(h.ran) != 3 || !strings.Contains(out.Error, "limit of nested calls") {
		t.Errorf("turn cap %v ran %d error %q", out.TurnCap, len(h.ran), out.Error)
	}
}

// R-SCR: in gated mode a call that would need a human ends the script with
// the host's line; nothing of its batch runs.
func TestScriptGatedCallNeedingHumanStops(t *testing.T) {
	h := &testHost{stopOn: "write"}
	out := runScript(t, h, `
tools.batch([("read", {}), ("write", {})])
print("never")
`, nil)
	if len(h.ran) != 0 || !strings.Contains(out.Error, "call it directly") || out.Printed != "" {
		t.Errorf("ran %v out %+v", h.ran, out)
	}
}

// R-SCR: store.set is applied only when the script finishes without error.
func TestScriptStoreAppliedOnlyOnSuccess(t *testing.T) {
	h := &testHost{}
	out := runScript(t, h, `
n = store.get("runs", 0)
store.set("runs", n + 1)
print(n)
`, map[string]json.RawMessage{"runs": json.RawMessage("4")})
	if out.Error != "" || string(out.Store["runs"]) != "5" || out.Printed != "4" {
		t.Errorf("store %v printed %q error %q", out.Store, out.Printed, out.Error)
	}
	out = runScript(t, h, `
store.set("runs", 99)
x = {}["missing"]
`, map[string]json.RawMessage{"runs": json.RawMessage("5")})
	if out.Store != nil || !strings.Contains(out.Error, "missing") {
		t.Errorf("a failed script gave store %v, error %q", out.Store, out.Error)
	}
}

// R-SCR: an answer over 200,000 chars gives the script its head and
// spills the whole as <script call id>.<n>.
func TestScriptAnswerOver200kSpilled(t *testing.T) {
	h := &testHost{}
	out := runScript(t, h, `
r = tools.call("read", {})
b = tools.call("big", {})
print(len(b["output"]))
print(b["output"][-200:])
`, nil)
	if out.Error != "" {
		t.Fatal(out.Error)
	}
	if len(h.spilled[2]) != AnswerChars+500 {
		t.Errorf("spilled %d chars of call 2", len(h.spilled[2]))
	}
	if !strings.Contains(out.Printed, `tool_output_read with call_id "call_x.2"`) || out.Calls[1].Chars > AnswerChars+300 {
		t.Errorf("printed %q, call chars %d", out.Printed[len(out.Printed)-300:], out.Calls[1].Chars)
	}
}

// R-SCR: printed output over 60,000 chars reaches the model as head and
// tail.
func TestScriptPrintedOver60kHeadAndTail(t *testing.T) {
	h := &testHost{}
	out := runScript(t, h, `
print("HEAD" + "a" * 70000 + "TAIL")
`, nil)
	if out.PrintedChars != 70008 || len([]rune(out.Printed)) > PrintedChars+200 {
		t.Errorf("printed chars %d, shown %d", out.PrintedChars, len(out.Printed))
	}
	if !strings.HasPrefix(out.Printed, "HEAD") || !strings.HasSuffix(out.Printed, "TAIL") || !strings.Contains(out.Printed, "characters of printed output cut here") {
		t.Errorf("not head and tail")
	}
}

// R-SCR: a syntax error comes back with line:col and a hint.
func TestScriptSyntaxErrorHasLineColAndHint(t *testing.T) {
	h := &testHost{}
	for src, want := range map[string]string{
		"x = 1\ntry:\n    x = 2\nexcept:\n    pass\n": "syntax error at line 2:1",
		"x = 1\nif x is None:\n    pass\n":            "x == None",
		"y = load(\"k\")\n":                           "store.get",
	} {
		out := runScript(t, h, src, nil)
		if !strings.Contains(out.Error, want) {
			t.Errorf("%q: error %q, want %q", src, out.Error, want)
		}
	}
	out := runScript(t, h, "x = 1\ntry:\n    pass\nexcept:\n    pass\n", nil)
	if !strings.Contains(out.Error, "Hint: no try/except") {
		t.Errorf("no hint: %q", out.Error)
	}
}

// R-SCR: names, search and describe are look-ups, not calls.
func TestScriptLookupsAreNotCalls(t *testing.T) {
	h := &testHost{}
	out := runScript(t, h, `
print(tools.names())
print(tools.search("files")[0]["description"])
print(tools.describe("read")["name"], tools.describe("nope")["error"])
print(llm.summarise("abcdefgh", max_chars=3)["output"])
`, nil)
	if out.Error != "" || !strings.Contains(out.Printed, `["read", "slow", "write"]`) || !strings.Contains(out.Printed, "reads files") ||
		!strings.Contains(out.Printed, `read no tool "nope"`) || !strings.Contains(out.Printed, "abc") {
		t.Errorf("out %+v", out)
	}
	if len(out.Calls) != 1 || out.Calls[0].Kind != "llm" || out.Calls[0].CostUSD == nil {
		t.Errorf("calls %+v, want only the model question", out.Calls)
	}
}

// R-SCR: killing the turn kills the script's process group; nothing
// outlives it.
func TestScriptKilledWithTurnLeavesNoProcess(t *testing.T) {
	h := &testHost{started: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	pid := make(chan int, 1)
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{Exe: os.Args[0], Args: []string{"__script"}, Sandbox: shelltest.New(t), TurnLeft: 10, Script: `tools.call("block", {})`,
			Started: func(p int) { pid <- p }}, h)
		done <- err
	}()
	<-h.started
	cancel()
	if err := <-done; err == nil {
		t.Error("a killed script returned no error")
	}
	if err := syscall.Kill(-<-pid, 0); err != syscall.ESRCH {
		t.Errorf("the script's process group is still there: %v", err)
	}
}

// R-SCR: memory is capped; a script that allocates without end dies with
// a clear error, not the server.
func TestScriptMemoryCapped(t *testing.T) {
	h := &testHost{}
	out, err := Run(t.Context(), Config{Exe: os.Args[0], Args: []string{"__script"}, Sandbox: shelltest.New(t), TurnLeft: 10, Steps: 1 << 40, Script: `
x = []
for i in range(100000):
    x.append(("%d" % i) * 200000)
`}, h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Error, "memory") {
		t.Errorf("error %q, want the memory cap", out.Error)
	}
}
