package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// Echo is fake:echo. It answers "echo: " plus the last user message's text,
// streams it as deltas, never calls a tool and costs nothing (cost known
// as 0, not unknown).
type Echo struct{}

var _ Model = Echo{}

// Call implements Model.
func (e Echo) Call(ctx context.Context, req Request) (Reply, error) { return lcModel{e}.Call(ctx, req) }

// GenerateContent is Call in langchaingo's terms.
func (Echo) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	last := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llms.ChatMessageTypeHuman {
			last = partsText(msgs[i].Parts)
			break
		}
	}
	a := newAccumulator(ctx, ProviderFake, callOptions(opts))
	for _, piece := range chunks("echo: "+last, 3) {
		if err := a.addText(piece); err != nil {
			return nil, err
		}
	}
	a.finish = "stop"
	return fakeResponse(a, 0, 0, true, 0), nil
}

func partsText(parts []llms.ContentPart) string {
	var b strings.Builder
	for _, p := range parts {
		if t, ok := p.(llms.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// chunks splits s into at most n pieces on rune boundaries, so fakes
// stream like a real model does.
func chunks(s string, n int) []string {
	r := []rune(s)
	if len(r) == 0 {
		return nil
	}
	size := max(1, (len(r)+n-1)/n)
	var out []string
	for i := 0; i < len(r); i += size {
		out = append(out, string(r[i:min(i+size, len(r))]))
	}
	return out
}

func fakeResponse(a *accumulator, in, out int, costKnown bool, cost float64) *llms.ContentResponse {
	resp := a.response(nil)
	gi := resp.Choices[0].GenerationInfo
	gi[infoInput], gi[infoOutput], gi[infoTotal] = in, out, in+out
	if costKnown {
		gi[infoCost] = cost
	}
	return resp
}

// ScriptModel is fake:script:<file>: it plays the file's replies in order,
// one per GenerateContent call, by a counter it keeps. Each call takes the
// next entry, whether or not earlier calls were cancelled or failed; a 429
// entry followed by a text entry is therefore "rate limited once, then
// answered" through Call. The server keeps one ScriptModel per route for
// the process lifetime, so the script advances across turns and
// conversations.
//
// The counter starts from the history: on its first call a ScriptModel
// skips one successful entry (one without error) per assistant message
// already in msgs. A restarted server therefore resumes a conversation
// where its script left off, and a new conversation starts at entry 1. The
// file format is documented in doc.go.
type ScriptModel struct {
	file    string
	replies []scriptReply
	// Sleep waits out an entry's delay; nil uses a timer. It must return
	// ctx.Err() when ctx ends first.
	Sleep func(ctx context.Context, d time.Duration) error

	mu      sync.Mutex
	started bool
	next    int
}

var _ Model = (*ScriptModel)(nil)

// Call implements Model: it plays the next reply.
func (m *ScriptModel) Call(ctx context.Context, req Request) (Reply, error) {
	return lcModel{m}.Call(ctx, req)
}

// Calls is the script position: entries played, plus those skipped when
// resuming.
func (m *ScriptModel) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next
}

// Len is the number of replies in the script.
func (m *ScriptModel) Len() int { return len(m.replies) }

// GenerateContent is Call in langchaingo's terms.
func (m *ScriptModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	m.mu.Lock()
	if !m.started {
		m.started = true
		m.next = m.resumeAt(msgs)
	}
	n := m.next
	m.next++
	m.mu.Unlock()
	if n >= len(m.replies) {
		return nil, &Error{Kind: ErrPermanent, Provider: ProviderFake,
			Body: fmt.Sprintf("%s: call %d: script has only %d replies", m.file, n+1, len(m.replies))}
	}
	r := m.replies[n]
	if r.delay > 0 {
		sleep := m.Sleep
		if sleep == nil {
			sleep = sleepCtx
		}
		if err := sleep(ctx, r.delay); err != nil {
			return nil, fmt.Errorf("%s: call %d: %w", m.file, n+1, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a := newAccumulator(ctx, ProviderFake, callOptions(opts))
	for _, piece := range chunks(r.text, 3) {
		if err := a.addText(piece); err != nil {
			return nil, err
		}
	}
	idBase := scriptCallIDBase(msgs, n)
	for i, c := range r.calls {
		id := c.id
		if id == "" {
			id = fmt.Sprintf("%s_%d", idBase, i)
		}
		for j, piece := range append([]string{""}, chunks(c.args, 2)...) {
			td := wireToolDelta{Index: &i}
			if j == 0 {
				td.ID, td.Function.Name = id, c.name
			}
			td.Function.Arguments, _ = json.Marshal(piece)
			a.addTool(td)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	a.finish = "stop"
	if len(r.calls) > 0 {
		a.finish = "tool_calls"
	}
	if r.finish != "" {
		a.finish = r.finish
	}
	return fakeResponse(a, r.input, r.output, !r.costUnknown, r.cost), nil
}

// resumeAt is the entry after the k-th successful one, k being the number
// of assistant messages msgs already holds: where a script that produced
// that history would be now.
func (m *ScriptModel) resumeAt(msgs []llms.MessageContent) int {
	k := 0
	for _, msg := range msgs {
		if msg.Role == llms.ChatMessageTypeAI {
			k++
		}
	}
	for i, r := range m.replies {
		if k == 0 {
			return i
		}
		if r.err == nil {
			k--
		}
	}
	return len(m.replies)
}

// scriptCallIDBase derives default tool-call ids from what the model was
// sent and the call number: deterministic for the same input, and
// different after a restart replays the script into a longer history (the
// loop keys state and spill files by call id).
func scriptCallIDBase(msgs []llms.MessageContent, n int) string {
	h := sha256.New()
	for _, m := range msgs {
		fmt.Fprintf(h, "%s\x00", m.Role)
		for _, p := range m.Parts {
			fmt.Fprintf(h, "%T", p)
			_ = json.NewEncoder(h).Encode(p) // values, never pointers
		}
	}
	return fmt.Sprintf("call_%s_%d", hex.EncodeToString(h.Sum(nil)[:4]), n+1)
}
