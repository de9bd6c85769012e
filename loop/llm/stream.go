package llm

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// readSSE reads server-sent events from r and hands each event's data to
// onData until onData reports done, the stream ends or reading fails.
// onLine is called for every line, comments (keep-alives) included.
func readSSE(r io.Reader, onData func([]byte) (bool, error), onLine func()) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var data []byte
	pending := false
	dispatch := func() (bool, error) {
		if !pending {
			return false, nil
		}
		d := data
		data, pending = nil, false
		return onData(d)
	}
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			onLine()
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0:
				if done, derr := dispatch(); done || derr != nil {
					return derr
				}
			case line[0] == ':': // comment, e.g. ": OPENROUTER PROCESSING"
			default:
				field, value, _ := bytes.Cut(line, []byte(":"))
				value = bytes.TrimPrefix(value, []byte(" "))
				if string(field) == "data" {
					if pending {
						data = append(data, '\n')
					}
					data = append(data, value...)
					pending = true
				}
			}
		}
		if err == io.EOF {
			_, derr := dispatch()
			return derr
		}
		if err != nil {
			return err
		}
	}
}

// errStopped marks a reply abandoned because the caller's streaming func
// asked for it.
var errStopped = errors.New("streaming stopped by caller")

type wireUsage struct {
	PromptTokens     int      `json:"prompt_tokens"`
	CompletionTokens int      `json:"completion_tokens"`
	TotalTokens      int      `json:"total_tokens"`
	Cost             *float64 `json:"cost"` // OpenRouter, in USD
	// The prompt cache: OpenAI's and OpenRouter's details, or Anthropic's
	// own fields as some gateways pass them on.
	PromptTokensDetails *struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	// Reasoning models (OpenAI's, OpenRouter's) count their thinking here,
	// inside completion_tokens.
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// cache is the usage's cached and written prompt tokens.
func (u *wireUsage) cache() (cached, written int) {
	if d := u.PromptTokensDetails; d != nil {
		cached, written = d.CachedTokens, d.CacheWriteTokens
	}
	return max(cached, u.CacheReadInputTokens), max(written, u.CacheCreationInputTokens)
}

type wireToolDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type wireError struct {
	Message  string          `json:"message"`
	Code     json.RawMessage `json:"code"`
	Metadata struct {
		Raw string `json:"raw"`
	} `json:"metadata"`
}

type wireChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          string          `json:"content"`
			Reasoning        string          `json:"reasoning"`
			ReasoningContent string          `json:"reasoning_content"`
			ToolCalls        []wireToolDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
	Error *wireError `json:"error"`
}

// wholeReply is a non-streamed completion.
type wholeReply struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content          string          `json:"content"`
			Reasoning        string          `json:"reasoning"`
			ReasoningContent string          `json:"reasoning_content"`
			ToolCalls        []wireToolDelta `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
	Error *wireError `json:"error"`
}

type callAcc struct {
	id, name string
	args     strings.Builder
}

// accumulator assembles one streamed reply. Tool calls are keyed by the
// delta's index: id and name come from the first delta that carries them,
// arguments are concatenated per index, and a repeated "type" changes
// nothing. Providers that omit the index, or reuse one index for calls
// with different ids, still get one call per id.
type accumulator struct {
	ctx      context.Context
	provider string
	deltas   func(Delta)
	stream   func(context.Context, []byte) error

	text      strings.Builder
	reasoning strings.Builder
	calls     []*callAcc
	byIndex   map[int]int
	byID      map[string]int
	finish    string
	usage     *wireUsage
	model     string
	id        string // the provider's id of the generation
	done      bool
}

func newAccumulator(ctx context.Context, provider string, o llms.CallOptions) *accumulator {
	return &accumulator{
		ctx: ctx, provider: provider, deltas: deltasOf(o), stream: o.StreamingFunc,
		byIndex: map[int]int{}, byID: map[string]int{},
	}
}

func (a *accumulator) finished() bool { return a.done || a.finish != "" }

// event takes one SSE data payload.
func (a *accumulator) event(data []byte) (bool, error) {
	if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
		a.done = true
		return true, nil
	}
	var c wireChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return false, &Error{Kind: ErrUnavailable, Provider: a.provider, Body: "malformed stream event: " + snippet(string(data)), Err: err}
	}
	if c.Error != nil {
		return false, a.streamError(c.Error)
	}
	if c.Model != "" {
		a.model = c.Model
	}
	if c.ID != "" {
		a.id = c.ID
	}
	if c.Usage != nil {
		a.usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // we never ask for n > 1
		}
		if err := a.addText(ch.Delta.Content); err != nil {
			return false, err
		}
		a.reasoning.WriteString(ch.Delta.Reasoning)
		a.reasoning.WriteString(ch.Delta.ReasoningContent)
		for _, td := range ch.Delta.ToolCalls {
			a.addTool(td)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			a.finish = *ch.FinishReason
		}
	}
	return false, nil
}

// whole takes a non-streamed reply.
func (a *accumulator) whole(b []byte) error {
	var r wholeReply
	if err := json.Unmarshal(b, &r); err != nil {
		return &Error{Kind: ErrUnavailable, Provider: a.provider, Body: "malformed reply: " + snippet(string(b)), Err: err}
	}
	if r.Error != nil {
		return a.streamError(r.Error)
	}
	if len(r.Choices) == 0 {
		return &Error{Kind: ErrUnavailable, Provider: a.provider, Body: "reply without choices"}
	}
	m := r.Choices[0].Message
	if err := a.addText(m.Content); err != nil {
		return err
	}
	a.reasoning.WriteString(m.Reasoning + m.ReasoningContent)
	for i, td := range m.ToolCalls {
		if td.Index == nil {
			td.Index = &i
		}
		a.addTool(td)
	}
	a.model, a.id, a.usage, a.finish, a.done = r.Model, r.ID, r.Usage, r.Choices[0].FinishReason, true
	return nil
}

func (a *accumulator) addText(s string) error {
	if s == "" {
		return nil
	}
	a.text.WriteString(s)
	a.deltas(Delta{Text: s})
	if a.stream != nil {
		if err := a.stream(a.ctx, []byte(s)); err != nil {
			return fmt.Errorf("%s: %w: %w", a.provider, errStopped, err)
		}
	}
	return nil
}

func (a *accumulator) addTool(td wireToolDelta) {
	s := a.slot(td)
	c := a.calls[s]
	announce := false
	if c.id == "" && td.ID != "" {
		c.id = td.ID
		a.byID[td.ID] = s
		announce = true
	}
	if c.name == "" && td.Function.Name != "" {
		c.name = td.Function.Name
		announce = true
	}
	piece := argumentsPiece(td.Function.Arguments, c.args.Len() == 0)
	c.args.WriteString(piece)
	if piece != "" || announce {
		a.deltas(Delta{ToolCallIndex: s, ToolCallID: c.id, ToolName: c.name, ArgumentsDelta: piece})
	}
}

func (a *accumulator) slot(td wireToolDelta) int {
	if td.ID != "" {
		if s, ok := a.byID[td.ID]; ok {
			if td.Index != nil {
				a.byIndex[*td.Index] = s
			}
			return s
		}
	}
	if td.Index != nil {
		if s, ok := a.byIndex[*td.Index]; ok && (td.ID == "" || a.calls[s].id == "") {
			return s
		}
		s := a.newSlot()
		a.byIndex[*td.Index] = s
		return s
	}
	if last := len(a.calls) - 1; last >= 0 && td.ID == "" && (td.Function.Name == "" || td.Function.Name == a.calls[last].name) {
		return last
	}
	return a.newSlot()
}

func (a *accumulator) newSlot() int {
	a.calls = append(a.calls, &callAcc{})
	return len(a.calls) - 1
}

// argumentsPiece reads the arguments field of a delta: normally a string
// fragment; some servers send the whole object instead.
func argumentsPiece(raw json.RawMessage, first bool) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if first && (raw[0] == '{' || raw[0] == '[') {
		return string(raw)
	}
	return ""
}

func (a *accumulator) streamError(e *wireError) error {
	status := 0
	msg := e.Message
	if len(e.Code) > 0 {
		var n int
		var s string
		switch {
		case json.Unmarshal(e.Code, &n) == nil:
			if n >= 100 && n <= 599 {
				status = n
			}
		case json.Unmarshal(e.Code, &s) == nil && s != "":
			if v, err := strconv.Atoi(s); err == nil && v >= 100 && v <= 599 {
				status = v
			} else {
				msg = s + ": " + msg
			}
		}
	}
	if e.Metadata.Raw != "" {
		msg += " (" + e.Metadata.Raw + ")"
	}
	return &Error{Kind: classify(status, msg), Provider: a.provider, Status: status, Body: snippet(msg)}
}

// response builds the langchaingo reply. price fills in the cost when the
// server reported token usage but no cost.
func (a *accumulator) response(price *Price) *llms.ContentResponse {
	ch := &llms.ContentChoice{
		Content:          a.text.String(),
		StopReason:       a.finish,
		ReasoningContent: a.reasoning.String(),
		GenerationInfo:   map[string]any{},
	}
	for _, c := range a.calls {
		if c.name == "" && c.args.Len() == 0 {
			continue
		}
		id := c.id
		if id == "" {
			id = newCallID()
		}
		args := c.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		ch.ToolCalls = append(ch.ToolCalls, llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: c.name, Arguments: args}})
	}
	if len(ch.ToolCalls) > 0 {
		ch.FuncCall = ch.ToolCalls[0].FunctionCall
	}
	gi := ch.GenerationInfo
	if a.model != "" {
		gi[infoModel] = a.model
	}
	if a.id != "" {
		gi[infoRequestID] = a.id
	}
	if u := a.usage; u != nil {
		gi[infoInput] = u.PromptTokens
		gi[infoOutput] = u.CompletionTokens
		total := u.TotalTokens
		if total == 0 {
			total = u.PromptTokens + u.CompletionTokens
		}
		gi[infoTotal] = total
		if d := u.CompletionTokensDetails; d != nil && d.ReasoningTokens > 0 {
			gi[infoReasoning] = d.ReasoningTokens
		}
		cached, written := u.cache()
		if cached > 0 || written > 0 {
			gi[infoCached] = cached
			gi[infoCacheWrite] = written
		}
		var cost, saved float64
		if price != nil {
			cost, saved = price.CachedCost(u.PromptTokens, cached, written, u.CompletionTokens)
			if cached > 0 || written > 0 {
				gi[infoCacheSaved] = saved
			}
		}
		switch {
		case u.Cost != nil: // what the provider billed is the cost
			gi[infoCost] = *u.Cost
		case price != nil:
			gi[infoCost] = cost
		}
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{ch}}
}

// newCallID names a tool call the provider left nameless: the loop pairs
// results with calls by id, so it must be unique.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
