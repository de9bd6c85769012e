package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// ClientConfig configures one model at one OpenAI-compatible server.
type ClientConfig struct {
	Provider   string // names the provider in errors: "openrouter", "ollama"
	BaseURL    string // with or without the trailing /v1
	APIKey     string // sent as a bearer token when set
	Model      string
	HTTPClient *http.Client // nil: a client without an overall timeout (replies stream)
	// Price computes the cost when the server reports none; nil leaves it
	// unknown.
	Price *Price
	// MaxOutputTokens is the max_tokens of a request whose options set
	// none; 0 is DefaultMaxOutputTokens.
	MaxOutputTokens int
	// AskCost asks OpenRouter to report the call's cost in usage.
	AskCost bool
	// CacheBreakpoints marks the prompt cache's breakpoints with
	// cache_control (Anthropic and Gemini models through OpenRouter): the
	// system message, and the message WithCacheBreakpoint names.
	CacheBreakpoints bool
	// NumCtx, when set, is sent as options.num_ctx (Ollama), so the
	// server's window is the one the harness compacts for.
	NumCtx int
	// IdleTimeout fails a call that receives nothing for this long
	// (headers included). Zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Now is the clock for Retry-After dates; nil is time.Now.
	Now func() time.Time
}

// DefaultIdleTimeout bounds the silence inside one streamed reply: long
// enough for a slow local model's first token, short enough that a dead
// connection does not hold a turn forever.
const DefaultIdleTimeout = 3 * time.Minute

// Client is an llms.Model over an OpenAI-compatible /chat/completions
// endpoint. It always streams. Safe for concurrent use.
type Client struct {
	cfg      ClientConfig
	endpoint string
	http     *http.Client
}

var _ llms.Model = (*Client)(nil)

// NewClient checks the base URL and returns the model.
func NewClient(cfg ClientConfig) (*Client, error) {
	endpoint, err := chatURL(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Provider, err)
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("%s: no model", cfg.Provider)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxOutputTokens <= 0 {
		cfg.MaxOutputTokens = DefaultMaxOutputTokens
	}
	return &Client{cfg: cfg, endpoint: endpoint, http: hc}, nil
}

var versionSegment = regexp.MustCompile(`^v[0-9]+`)

// chatURL turns a base URL into the chat completions endpoint. A base
// without a version segment (http://127.0.0.1:11434,
// https://openrouter.ai/api) gets /v1; one that already has it
// (…/api/v1, …/v1beta/openai) is kept; a full …/chat/completions is
// accepted too.
func chatURL(base string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		return "", fmt.Errorf("base URL %q: %w", base, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("base URL %q: want http(s)://host[/path]", base)
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/chat/completions")
	versioned := false
	for seg := range strings.SplitSeq(p, "/") {
		if versionSegment.MatchString(seg) {
			versioned = true
		}
	}
	if !versioned {
		p += "/v1"
	}
	u.Path = p + "/chat/completions"
	u.RawPath = ""
	return u.String(), nil
}

// Call implements the deprecated half of llms.Model.
func (c *Client) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, c, prompt, opts...)
}

// GenerateContent sends msgs and assembles the streamed reply.
func (c *Client) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	o := callOptions(opts)
	req, err := c.request(msgs, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", c.cfg.Provider, ErrPermanent, err)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: encoding request: %w", c.cfg.Provider, ErrPermanent, err)
	}

	// The idle timer cancels the request when the server goes silent; it
	// is reset on every line received.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(c.cfg.IdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()

	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", c.cfg.Provider, ErrPermanent, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	if c.cfg.Provider == ProviderOpenRouter {
		hreq.Header.Set("X-Title", "my-agent-crew")
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
		return nil, statusError(c.cfg.Provider, resp.StatusCode, resp.Header, b, c.cfg.Now())
	}

	acc := newAccumulator(ctx, c.cfg.Provider, o)
	if strings.Contains(resp.Header.Get("Content-Type"), "application/json") {
		// A server that ignored stream:true answered in one piece.
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, c.transportError(ctx, err)
		}
		if err := acc.whole(b); err != nil {
			return nil, err
		}
	} else if err := readSSE(resp.Body, func(data []byte) (bool, error) {
		idle.Reset(c.cfg.IdleTimeout)
		return acc.event(data)
	}, func() { idle.Reset(c.cfg.IdleTimeout) }); err != nil {
		var he *Error
		if errors.As(err, &he) || errors.Is(err, errStopped) {
			return nil, err
		}
		return nil, c.transportError(ctx, err)
	}
	if !acc.finished() {
		return nil, &Error{Kind: ErrUnavailable, Provider: c.cfg.Provider, Body: "stream ended before the reply was complete"}
	}
	return acc.response(c.cfg.Price), nil
}

var errIdle = errors.New("no data from the provider")

// transportError classifies a failure to connect or read: the caller's
// own cancellation passes through unclassified (the loop checks ctx), the
// rest — refused, reset, idle, timed out — is ErrUnavailable.
func (c *Client) transportError(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil {
		if errors.Is(cause, errIdle) {
			return &Error{Kind: ErrUnavailable, Provider: c.cfg.Provider, Body: fmt.Sprintf("no data for %s", c.cfg.IdleTimeout)}
		}
		return fmt.Errorf("%s: %w", c.cfg.Provider, cause)
	}
	return &Error{Kind: ErrUnavailable, Provider: c.cfg.Provider, Err: err}
}

// Wire types of /chat/completions (the subset we use).

type chatRequest struct {
	Model            string         `json:"model"`
	Messages         []chatMessage  `json:"messages"`
	Tools            []chatTool     `json:"tools,omitempty"`
	ToolChoice       any            `json:"tool_choice,omitempty"`
	Temperature      *float64       `json:"temperature,omitempty"`
	TopP             *float64       `json:"top_p,omitempty"`
	MaxTokens        int            `json:"max_tokens,omitempty"`
	Stop             []string       `json:"stop,omitempty"`
	Seed             *int           `json:"seed,omitempty"`
	FrequencyPenalty *float64       `json:"frequency_penalty,omitempty"`
	PresencePenalty  *float64       `json:"presence_penalty,omitempty"`
	ResponseFormat   *responseFmt   `json:"response_format,omitempty"`
	Stream           bool           `json:"stream"`
	StreamOptions    *streamOptions `json:"stream_options,omitempty"`
	Usage            *usageRequest  `json:"usage,omitempty"`   // OpenRouter
	Options          *ollamaOptions `json:"options,omitempty"` // Ollama
}

type ollamaOptions struct {
	NumCtx int `json:"num_ctx,omitempty"`
}

// cacheControl marks the end of a cached prefix.
type cacheControl struct {
	Type string `json:"type"`
}

var ephemeral = &cacheControl{Type: "ephemeral"}

const cacheBreakpointKey = "crew.cache_breakpoint"

// WithCacheBreakpoint names the message (an index into the request's
// messages) after which the prompt cache may hold the prefix: the last
// message of the previous step. A client without CacheBreakpoints ignores
// it.
func WithCacheBreakpoint(i int) llms.CallOption {
	return func(o *llms.CallOptions) {
		if o.Metadata == nil {
			o.Metadata = map[string]any{}
		}
		o.Metadata[cacheBreakpointKey] = i
	}
}

type responseFmt struct {
	Type string `json:"type"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type usageRequest struct {
	Include bool `json:"include"`
}

type chatMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"` // string, []contentPart or nil
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type contentPart struct {
	Type         string        `json:"type"`
	Text         string        `json:"text,omitempty"`
	ImageURL     *imageURL     `json:"image_url,omitempty"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

type imageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string                   `json:"type"`
	Function *llms.FunctionDefinition `json:"function"`
}

func (c *Client) request(msgs []llms.MessageContent, o llms.CallOptions) (*chatRequest, error) {
	req := &chatRequest{
		Model:         c.cfg.Model,
		Stream:        true,
		StreamOptions: &streamOptions{IncludeUsage: true},
		MaxTokens:     cmp.Or(o.MaxTokens, c.cfg.MaxOutputTokens),
		Stop:          o.StopWords,
	}
	if c.cfg.AskCost {
		req.Usage = &usageRequest{Include: true}
	}
	if c.cfg.NumCtx > 0 {
		req.Options = &ollamaOptions{NumCtx: c.cfg.NumCtx}
	}
	if !math.IsNaN(o.Temperature) {
		req.Temperature = &o.Temperature
	}
	if o.TopP != 0 {
		req.TopP = &o.TopP
	}
	if o.Seed != 0 {
		req.Seed = &o.Seed
	}
	if o.FrequencyPenalty != 0 {
		req.FrequencyPenalty = &o.FrequencyPenalty
	}
	if o.PresencePenalty != 0 {
		req.PresencePenalty = &o.PresencePenalty
	}
	if o.JSONMode {
		req.ResponseFormat = &responseFmt{Type: "json_object"}
	}
	for _, t := range o.Tools {
		if t.Function == nil {
			return nil, fmt.Errorf("tool of type %q has no function", t.Type)
		}
		req.Tools = append(req.Tools, chatTool{Type: "function", Function: t.Function})
	}
	for i := range o.Functions {
		req.Tools = append(req.Tools, chatTool{Type: "function", Function: &o.Functions[i]})
	}
	switch tc := o.ToolChoice.(type) {
	case nil:
	case string:
		req.ToolChoice = tc
	case llms.ToolChoice, *llms.ToolChoice:
		req.ToolChoice = tc
	default:
		return nil, fmt.Errorf("tool choice of type %T", o.ToolChoice)
	}
	mark := -1
	if i, ok := o.Metadata[cacheBreakpointKey].(int); ok {
		mark = i
	}
	for i, m := range msgs {
		cms, err := toWire(m)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if c.cfg.CacheBreakpoints && len(cms) > 0 && (m.Role == llms.ChatMessageTypeSystem && i == 0 || i == mark) {
			markCached(&cms[len(cms)-1])
		}
		req.Messages = append(req.Messages, cms...)
	}
	return req, nil
}

// markCached puts cache_control on the last content part of m, turning
// plain text content into one text part; a message without content (an
// assistant's tool calls alone) is left as it is.
func markCached(m *chatMessage) {
	switch c := m.Content.(type) {
	case string:
		if c == "" {
			return
		}
		m.Content = []contentPart{{Type: "text", Text: c, CacheControl: ephemeral}}
	case []contentPart:
		if len(c) == 0 {
			return
		}
		c = slices.Clone(c)
		c[len(c)-1].CacheControl = ephemeral
		m.Content = c
	}
}

// toWire maps one langchaingo message to OpenAI messages: a tool message
// with several responses becomes one message per response.
func toWire(m llms.MessageContent) ([]chatMessage, error) {
	switch m.Role {
	case llms.ChatMessageTypeSystem:
		text, err := onlyText(m)
		return []chatMessage{{Role: "system", Content: text}}, err
	case llms.ChatMessageTypeHuman, llms.ChatMessageTypeGeneric:
		cm, err := userMessage(m)
		return []chatMessage{cm}, err
	case llms.ChatMessageTypeAI:
		var text strings.Builder
		var calls []chatToolCall
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				text.WriteString(p.Text)
			case llms.ToolCall:
				if p.FunctionCall == nil {
					return nil, fmt.Errorf("assistant tool call %q without function", p.ID)
				}
				args := p.FunctionCall.Arguments
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				calls = append(calls, chatToolCall{ID: p.ID, Type: "function", Function: chatFunction{Name: p.FunctionCall.Name, Arguments: args}})
			default:
				return nil, fmt.Errorf("assistant message part of type %T", p)
			}
		}
		cm := chatMessage{Role: "assistant", ToolCalls: calls}
		// null, not "", next to tool calls: some upstreams reject empty
		// text blocks.
		if text.Len() > 0 || len(calls) == 0 {
			cm.Content = text.String()
		}
		return []chatMessage{cm}, nil
	case llms.ChatMessageTypeTool, llms.ChatMessageTypeFunction:
		var out []chatMessage
		for _, p := range m.Parts {
			r, ok := p.(llms.ToolCallResponse)
			if !ok {
				return nil, fmt.Errorf("tool message part of type %T", p)
			}
			out = append(out, chatMessage{Role: "tool", ToolCallID: r.ToolCallID, Content: r.Content})
		}
		return out, nil
	}
	return nil, fmt.Errorf("role %q not supported", m.Role)
}

func onlyText(m llms.MessageContent) (string, error) {
	var b strings.Builder
	for _, p := range m.Parts {
		t, ok := p.(llms.TextContent)
		if !ok {
			return "", fmt.Errorf("%s message part of type %T", m.Role, p)
		}
		b.WriteString(t.Text)
	}
	return b.String(), nil
}

// userMessage sends plain text as a string (what every server accepts) and
// switches to content parts only when there are images.
func userMessage(m llms.MessageContent) (chatMessage, error) {
	var parts []contentPart
	var text strings.Builder
	images := false
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			text.WriteString(p.Text)
			parts = append(parts, contentPart{Type: "text", Text: p.Text})
		case llms.ImageURLContent:
			images = true
			parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{URL: p.URL, Detail: p.Detail}})
		case llms.BinaryContent:
			images = true
			parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{URL: p.String()}})
		default:
			return chatMessage{}, fmt.Errorf("user message part of type %T", p)
		}
	}
	if images {
		return chatMessage{Role: "user", Content: parts}, nil
	}
	return chatMessage{Role: "user", Content: text.String()}, nil
}
