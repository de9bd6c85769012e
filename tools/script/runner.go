package script

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/my-agent-crew/crew/tools/shell"
)

// Limits of R-SCR.
const (
	MaxCalls      = 25      // tool and model calls per script
	MaxBatch      = 10      // calls per tools.batch
	Concurrency   = 4       // calls of a batch at once
	AnswerChars   = 200_000 // of one answer the script gets; the rest is spilled
	PrintedChars  = 60_000  // of the printed output the model gets (head and tail)
	TurnCallsEach = 10      // a turn's scripts share max_steps × this many calls
)

// Host is what a script's calls reach; the loop gives one per
// tool_script call.
type Host interface {
	// Vet decides a call before any call of its batch runs: refusal is the
	// error value the script gets for it; stop ends the script with that
	// line (a call that would need a human, or that the owner forbids).
	Vet(name string, args json.RawMessage) (refusal, stop string)
	// Run runs one allowed call, the script's n-th; err means the harness
	// failed. The calls of a batch run at once: Run, Spill and Nested must
	// be safe for concurrent use.
	Run(ctx context.Context, n int, name string, args json.RawMessage) (output string, isErr bool, err error)
	// Ask answers llm.classify and llm.summarise (a model call); stop ends
	// the script (the turn's cost cap).
	Ask(ctx context.Context, a LLMAsk) (answer string, isErr bool, cost *float64, stop string, err error)
	// Names, Search and Describe are look-ups: no call, nothing counted.
	Names() []string
	Search(query string) []map[string]any
	Describe(name string) (map[string]any, bool)
	// Nested records a call as soon as it finished (nested_call), before
	// the other calls of its batch are done.
	Nested(ctx context.Context, c Nested) error
	// Spill keeps the whole of a long answer (call n; 0: the printed
	// output) and returns how tool_output_read names it.
	Spill(n int, full string) (ref string, err error)
}

// Nested is one call a script made, as the run card and the result list it.
type Nested struct {
	N          int             `json:"n"`
	Kind       string          `json:"kind"` // tool or llm
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"arguments,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	Chars      int             `json:"chars"` // what the script received
	DurationMS int64           `json:"duration_ms"`
	CostUSD    *float64        `json:"cost_usd,omitempty"`
	Output     string          `json:"-"` // what the script received
}

// Config is one run.
type Config struct {
	Exe      string   // the crew binary
	Args     []string // its arguments that start the child: ["__script"]
	Script   string
	Store    map[string]json.RawMessage
	TurnLeft int    // calls the turn still allows its scripts
	Steps    uint64 // Starlark steps; 0: DefaultSteps
	// Started, when set, is told the child's pid (its process group).
	Started func(pid int)
	// Home is the crew home, hidden from the child; "" hides nothing more.
	Home string
	// Sandbox starts the child (nil: the script is not run).
	Sandbox *shell.Sandbox
}

// Timeout bounds one script's child: the turn's end kills it sooner.
const Timeout = shell.MaxTimeout

// Outcome is what a run gave.
type Outcome struct {
	Printed       string // what the model reads: head and tail past PrintedChars
	PrintedChars  int
	ReceivedChars int
	Calls         []Nested
	// Store is the store after the run, nil unless the script finished
	// without error (only then are its writes applied).
	Store    map[string]json.RawMessage
	Error    string // why the script did not finish
	TurnCap  bool   // the turn's share of calls ran out
	Limited  bool   // stopped at MaxCalls
	Runnable bool   // false: the child never ran (harness failure)
}

// Run runs the script in a child process and answers its requests until
// it is done; ctx ending kills the child's process group.
func Run(ctx context.Context, cfg Config, h Host) (*Outcome, error) {
	// The child starts like every process an agent's action causes:
	// through tools/shell, in its own namespaces with the home hidden, no
	// network, Landlock and seccomp, no environment. It speaks over two
	// pipes; ours close once it is gone, which ends the reading.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	var view *shell.View
	if cfg.Home != "" {
		view = &shell.View{Home: cfg.Home}
	}
	type ended struct {
		out shell.Output
		err error
	}
	exited := make(chan ended, 1)
	go func() {
		out, err := cfg.Sandbox.Run(ctx, shell.Command{
			Exec: append([]string{cfg.Exe}, cfg.Args...), Dir: "/", Env: []string{},
			Timeout: Timeout, Stdin: inR, Stdout: outW, View: view,
			Sandbox: &shell.Policy{Network: false}, Started: cfg.Started,
		})
		inR.Close()
		outW.Close()
		exited <- ended{out, err}
	}()
	r := &run{cfg: cfg, h: h, out: &Outcome{Runnable: true}, enc: json.NewEncoder(inW)}
	err = r.serve(ctx, bufio.NewReaderSize(outR, 1<<16))
	inW.Close()
	end := <-exited
	outR.Close()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if end.err != nil {
		return nil, fmt.Errorf("start the script process: %w", end.err)
	}
	if err != nil {
		return nil, err
	}
	if !r.done {
		why := "the script process ended without a result"
		switch {
		case end.out.TimedOut:
			why += fmt.Sprintf(": it ran past %s", Timeout)
		case end.out.Signal != "":
			why += ": " + end.out.Signal
		case end.out.ExitCode != 0:
			why += fmt.Sprintf(": exit status %d", end.out.ExitCode)
		}
		if e := end.out.Text; strings.Contains(e, "out of memory") || strings.Contains(e, "cannot allocate memory") || strings.Contains(e, "failed to allocate") ||
			strings.Contains(e, "address space collisions") { // the race detector's runtime, out of address space
			why = fmt.Sprintf("the script used more than %d MiB of memory and was stopped", MemoryLimit>>20)
		}
		r.out.Error = why
	}
	r.finish()
	return r.out, nil
}

type run struct {
	cfg     Config
	h       Host
	out     *Outcome
	enc     *json.Encoder
	printed strings.Builder
	calls   int
	done    bool
}

func (r *run) send(rep reply) error { return r.enc.Encode(rep) }

func (r *run) serve(ctx context.Context, in *bufio.Reader) error {
	store := cfgStore(r.cfg.Store)
	if err := r.enc.Encode(start{Script: r.cfg.Script, Store: store, Steps: r.cfg.Steps}); err != nil {
		return nil // the child died at once; Wait tells why
	}
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return nil
		}
		var q request
		if err := json.Unmarshal(line, &q); err != nil {
			r.out.Error = "the script process wrote a bad line: " + err.Error()
			return nil
		}
		switch q.Op {
		case "print":
			if r.printed.Len() > 0 {
				r.printed.WriteByte('\n')
			}
			r.printed.WriteString(q.Text)
		case "done":
			r.done = true
			if q.Error != "" {
				r.out.Error = q.Error
			} else {
				var st map[string]json.RawMessage
				json.Unmarshal(q.Store, &st)
				if st == nil {
					st = map[string]json.RawMessage{}
				}
				r.out.Store = st
			}
			return nil
		case "names":
			b, _ := json.Marshal(r.h.Names())
			if err := r.send(reply{ID: q.ID, Value: b}); err != nil {
				return nil
			}
		case "search":
			b, _ := json.Marshal(r.h.Search(q.Query))
			if err := r.send(reply{ID: q.ID, Value: b}); err != nil {
				return nil
			}
		case "describe":
			d, ok := r.h.Describe(q.Name)
			var b []byte
			if ok {
				b, _ = json.Marshal(d)
			} else {
				b, _ = json.Marshal(map[string]any{"error": fmt.Sprintf("no tool %q: see tools.names()", q.Name)})
			}
			if err := r.send(reply{ID: q.ID, Value: b}); err != nil {
				return nil
			}
		case "call":
			rep, err := r.calls_(ctx, q)
			if err != nil {
				return err
			}
			if err := r.send(rep); err != nil {
				return nil
			}
		case "llm":
			rep, err := r.llm(ctx, q)
			if err != nil {
				return err
			}
			if err := r.send(rep); err != nil {
				return nil
			}
		default:
			r.out.Error = "the script process asked for " + q.Op
			return nil
		}
	}
}

func cfgStore(s map[string]json.RawMessage) map[string]json.RawMessage {
	if s == nil {
		return map[string]json.RawMessage{}
	}
	return s
}

// budget says whether k more calls may run: a stop line when not.
func (r *run) budget(k int) (stop string) {
	if r.calls+k > r.cfg.TurnLeft {
		r.out.TurnCap = true
		return fmt.Sprintf("STOP: this turn's scripts reached their limit of nested calls (max_steps × %d); the script was stopped and the turn ends.", TurnCallsEach)
	}
	if r.calls+k > MaxCalls {
		r.out.Limited = true
		return fmt.Sprintf("STOP: the script stopped at the limit of %d calls.", MaxCalls)
	}
	return ""
}

// calls_ runs a tools.call or tools.batch: every call vetted before any
// runs, at most Concurrency at once, results in written order.
func (r *run) calls_(ctx context.Context, q request) (reply, error) {
	k := len(q.Calls)
	if k == 0 {
		return reply{ID: q.ID, Results: []Value{}}, nil
	}
	if q.Batch && k > MaxBatch {
		res := make([]Value, k)
		for i := range res {
			res[i] = fail(fmt.Sprintf("not run: tools.batch takes at most %d calls, this one held %d; split it", MaxBatch, k))
		}
		return reply{ID: q.ID, Results: res}, nil
	}
	if stop := r.budget(k); stop != "" {
		return reply{ID: q.ID, Stop: stop}, nil
	}
	refusals := make([]string, k)
	refused := ""
	for i, c := range q.Calls {
		why, stop := r.h.Vet(c.Name, c.Args)
		if stop != "" {
			return reply{ID: q.ID, Stop: stop}, nil
		}
		refusals[i] = why
		if why != "" && refused == "" {
			refused = c.Name
		}
	}
	res := make([]Value, k)
	if refused != "" {
		for i := range res {
			if refusals[i] != "" {
				res[i] = fail(refusals[i])
			} else {
				res[i] = fail(fmt.Sprintf("not run: the batch held a call a script cannot make (%s), so none of it ran", refused))
			}
		}
		return reply{ID: q.ID, Results: res}, nil
	}
	// Numbered in written order before any runs; each is recorded as it
	// ends, so a slow call does not hold back the line of a fast one.
	base := r.calls
	r.calls += k
	nested := make([]Nested, k)
	var wg sync.WaitGroup
	sem := make(chan struct{}, Concurrency)
	var herr error
	var mu sync.Mutex
	for i, c := range q.Calls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			n := base + i + 1
			t0 := time.Now()
			out, isErr, err := r.h.Run(ctx, n, c.Name, c.Args)
			if err == nil {
				given := r.cut(n, out)
				nested[i] = Nested{N: n, Kind: "tool", Tool: c.Name, Args: c.Args, IsError: isErr, Output: given,
					Chars: utf8.RuneCountInString(given), DurationMS: time.Since(t0).Milliseconds()}
				err = r.h.Nested(ctx, nested[i])
			}
			if err != nil {
				mu.Lock()
				herr = cmpErr(herr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if herr != nil {
		return reply{}, herr
	}
	for i, n := range nested {
		r.out.ReceivedChars += n.Chars
		if n.IsError {
			res[i] = fail(n.Output)
		} else {
			res[i] = ok(n.Output)
		}
		r.out.Calls = append(r.out.Calls, n)
	}
	return reply{ID: q.ID, Results: res}, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// cut gives the script at most AnswerChars of an answer and spills the
// whole, readable with tool_output_read.
func (r *run) cut(n int, s string) string {
	if utf8.RuneCountInString(s) <= AnswerChars {
		return s
	}
	head := headRunes(s, AnswerChars)
	ref, err := r.h.Spill(n, s)
	if err != nil {
		return head + fmt.Sprintf("\n[Cut at %d characters; the rest could not be kept: %v]", AnswerChars, err)
	}
	return head + fmt.Sprintf("\n[Cut at %d of %d characters; the whole answer is kept: tool_output_read with call_id %q reads it.]", AnswerChars, utf8.RuneCountInString(s), ref)
}

func (r *run) llm(ctx context.Context, q request) (reply, error) {
	if q.LLM == nil {
		return reply{ID: q.ID, Results: []Value{fail("llm: nothing asked")}}, nil
	}
	if stop := r.budget(1); stop != "" {
		return reply{ID: q.ID, Stop: stop}, nil
	}
	t0 := time.Now()
	ans, isErr, cost, stop, err := r.h.Ask(ctx, *q.LLM)
	if err != nil {
		return reply{}, err
	}
	if stop != "" {
		return reply{ID: q.ID, Stop: stop}, nil
	}
	r.calls++
	args, _ := json.Marshal(q.LLM)
	n := Nested{N: r.calls, Kind: "llm", Tool: "llm." + q.LLM.Kind, Args: args, IsError: isErr, Output: ans,
		Chars: utf8.RuneCountInString(ans), DurationMS: time.Since(t0).Milliseconds(), CostUSD: cost}
	r.out.ReceivedChars += n.Chars
	if err := r.h.Nested(ctx, n); err != nil {
		return reply{}, err
	}
	r.out.Calls = append(r.out.Calls, n)
	if isErr {
		return reply{ID: q.ID, Results: []Value{fail(ans)}}, nil
	}
	return reply{ID: q.ID, Results: []Value{ok(ans)}}, nil
}

// finish lays out what the model reads of the printed output.
func (r *run) finish() {
	full := r.printed.String()
	r.out.PrintedChars = utf8.RuneCountInString(full)
	r.out.Printed = full
	if r.out.PrintedChars > PrintedChars {
		half := PrintedChars / 2
		rs := []rune(full)
		note := fmt.Sprintf("\n[… %d characters of printed output cut here …]\n", len(rs)-2*half)
		if ref, err := r.h.Spill(0, full); err == nil {
			note = fmt.Sprintf("\n[… %d characters of printed output cut here; tool_output_read with call_id %q reads the whole …]\n", len(rs)-2*half, ref)
		}
		r.out.Printed = string(rs[:half]) + note + string(rs[len(rs)-half:])
	}
}

func headRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
