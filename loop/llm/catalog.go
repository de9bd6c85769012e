package llm

import "strings"

// ModelSpec is what the harness knows of one route's model: how much it
// reads and writes, whether it sees images, what it costs.
type ModelSpec struct {
	// ContextWindow is the most tokens a request (prompt and reply) may
	// hold; compaction keeps the prompt below it.
	ContextWindow int
	// MaxOutputTokens is the max_tokens every request sends.
	MaxOutputTokens int
	// Vision: the model accepts image parts.
	Vision bool
	// Price is used when the provider reports no cost; nil: unknown.
	Price *Price
	// Cache is how the provider caches the prompt: CacheBreakpoints (the
	// request marks where, cache_control), CacheAutomatic (the provider
	// finds the prefix itself) or "" (no caching known).
	Cache string
}

// Prompt caching modes of ModelSpec.Cache.
const (
	CacheBreakpoints = "breakpoints"
	CacheAutomatic   = "automatic"
)

// Defaults for a route nothing is known about.
const (
	DefaultContextWindow   = 32768
	DefaultMaxOutputTokens = 4096
)

// ModelOverride is the owner's models.<route> entry: each field set
// replaces the known default; nil keeps it.
type ModelOverride struct {
	ContextWindow    *int
	MaxOutputTokens  *int
	Vision           *bool
	InputUSDPerMTok  *float64
	OutputUSDPerMTok *float64
}

// Catalog answers ModelSpec for a route: the owner's config.yaml models:
// entry over the known defaults below over DefaultContextWindow and
// DefaultMaxOutputTokens. A nil *Catalog knows only the defaults.
type Catalog struct {
	owner map[string]ModelOverride
}

// NewCatalog keeps owner (keyed by route) as given.
func NewCatalog(owner map[string]ModelOverride) *Catalog {
	return &Catalog{owner: owner}
}

// Lookup is route's spec. Known defaults match the route, or for
// OpenRouter the model name alone ("anthropic/claude-sonnet-4").
func (c *Catalog) Lookup(route string) ModelSpec {
	spec := ModelSpec{ContextWindow: DefaultContextWindow, MaxOutputTokens: DefaultMaxOutputTokens}
	r, rerr := ParseRoute(route)
	if k, ok := known[route]; ok {
		spec = k.spec()
	} else if rerr == nil {
		switch r.Provider {
		case ProviderOpenRouter:
			if k, ok := known[r.Model]; ok {
				spec = k.spec()
			}
		case ProviderFake:
			spec.Price = &Price{} // the fakes are free
		}
	}
	if rerr == nil {
		switch r.Provider {
		case ProviderOllama:
			// A local model costs nothing; a remote OLLAMA_HOST that bills
			// sets its price in models:.
			spec.Price = &Price{}
		case ProviderOpenRouter:
			spec.Cache = cacheOf(r.Model)
		}
	}
	ownerOut := false
	if c != nil {
		if o, ok := c.owner[route]; ok {
			spec = o.over(spec)
			ownerOut = o.MaxOutputTokens != nil
		}
	}
	if spec.Price != nil && rerr == nil && r.Provider == ProviderOpenRouter {
		spec.Price.withCachePrices(r.Model)
	}
	// A default reply may not take the window: on a small one (an Ollama
	// num_ctx of 4,096 and the 4,096 default) it gets a quarter. The
	// owner's own max_output_tokens stands (config checks it fits).
	if !ownerOut && spec.ContextWindow > 0 && spec.MaxOutputTokens > spec.ContextWindow/2 {
		spec.MaxOutputTokens = max(spec.ContextWindow/4, 1)
	}
	return spec
}

// cacheOf is how OpenRouter's upstream for model caches prompts:
// Anthropic and Gemini models read cache_control breakpoints (OpenRouter
// passes them through), OpenAI's and DeepSeek's cache on their own.
func cacheOf(model string) string {
	switch {
	case strings.HasPrefix(model, "anthropic/"), strings.HasPrefix(model, "google/gemini"):
		return CacheBreakpoints
	case strings.HasPrefix(model, "openai/"), strings.HasPrefix(model, "deepseek/"):
		return CacheAutomatic
	}
	return ""
}

// withCachePrices sets what a cached input token and a cache write cost
// for model, from its family's published rule (Anthropic: reads 0.1×,
// writes 1.25× the input price; Gemini: reads 0.25×; OpenAI: reads 0.5×,
// 0.25× for GPT-4.1 and 0.1× for GPT-5; DeepSeek: reads 0.1×), unless set.
func (p *Price) withCachePrices(model string) {
	read, write := 1.0, 1.0
	switch {
	case strings.HasPrefix(model, "anthropic/"):
		read, write = 0.1, 1.25
	case strings.HasPrefix(model, "google/gemini"):
		read = 0.25
	case strings.HasPrefix(model, "openai/gpt-5"):
		read = 0.1
	case strings.HasPrefix(model, "openai/gpt-4.1"):
		read = 0.25
	case strings.HasPrefix(model, "openai/"):
		read = 0.5
	case strings.HasPrefix(model, "deepseek/"):
		read = 0.1
	}
	if p.CachedInputPerMTok == nil {
		p.CachedInputPerMTok = ptrTo(p.InputPerMTok * read)
	}
	if p.CacheWritePerMTok == nil {
		p.CacheWritePerMTok = ptrTo(p.InputPerMTok * write)
	}
}

func ptrTo[T any](v T) *T { return &v }

// over is spec with the owner's fields set.
func (o ModelOverride) over(spec ModelSpec) ModelSpec {
	if o.ContextWindow != nil {
		spec.ContextWindow = *o.ContextWindow
	}
	if o.MaxOutputTokens != nil {
		spec.MaxOutputTokens = *o.MaxOutputTokens
	}
	if o.Vision != nil {
		spec.Vision = *o.Vision
	}
	if o.InputUSDPerMTok != nil || o.OutputUSDPerMTok != nil {
		p := Price{}
		if spec.Price != nil {
			p = *spec.Price
		}
		if o.InputUSDPerMTok != nil {
			p.InputPerMTok = *o.InputUSDPerMTok
			p.CachedInputPerMTok, p.CacheWritePerMTok = nil, nil // derived again from the owner's price
		}
		if o.OutputUSDPerMTok != nil {
			p.OutputPerMTok = *o.OutputUSDPerMTok
		}
		spec.Price = &p
	}
	return spec
}

// Price is route's price, or nil when unknown.
func (c *Catalog) Price(route string) *Price { return c.Lookup(route).Price }

// knownModel is one row of the built-in table.
type knownModel struct {
	window, output int
	vision         bool
	in, out        float64 // USD per million tokens
}

func (k knownModel) spec() ModelSpec {
	s := ModelSpec{ContextWindow: k.window, MaxOutputTokens: k.output, Vision: k.vision}
	if k.in > 0 || k.out > 0 {
		s.Price = &Price{InputPerMTok: k.in, OutputPerMTok: k.out}
	}
	if s.MaxOutputTokens == 0 {
		s.MaxOutputTokens = DefaultMaxOutputTokens
	}
	return s
}

// known holds common models, by OpenRouter model name or by route. Prices
// are list prices in USD per million tokens at the time of writing; the
// owner's models: entry wins. max_output_tokens stays at the 4096 default
// (a longer reply is continued, R-LOOP-7) unless the owner raises it.
var known = map[string]knownModel{
	"anthropic/claude-opus-4":                  {window: 200000, vision: true, in: 15, out: 75},
	"anthropic/claude-opus-4.1":                {window: 200000, vision: true, in: 15, out: 75},
	"anthropic/claude-sonnet-4":                {window: 200000, vision: true, in: 3, out: 15},
	"anthropic/claude-sonnet-4.5":              {window: 200000, vision: true, in: 3, out: 15},
	"anthropic/claude-3.7-sonnet":              {window: 200000, vision: true, in: 3, out: 15},
	"anthropic/claude-3.5-haiku":               {window: 200000, vision: true, in: 0.8, out: 4},
	"anthropic/claude-haiku-4.5":               {window: 200000, vision: true, in: 1, out: 5},
	"openai/gpt-4o":                            {window: 128000, vision: true, in: 2.5, out: 10},
	"openai/gpt-4o-mini":                       {window: 128000, vision: true, in: 0.15, out: 0.6},
	"openai/gpt-4.1":                           {window: 1047576, vision: true, in: 2, out: 8},
	"openai/gpt-4.1-mini":                      {window: 1047576, vision: true, in: 0.4, out: 1.6},
	"openai/gpt-4.1-nano":                      {window: 1047576, vision: true, in: 0.1, out: 0.4},
	"openai/gpt-5":                             {window: 400000, vision: true, in: 1.25, out: 10},
	"openai/gpt-5-mini":                        {window: 400000, vision: true, in: 0.25, out: 2},
	"openai/o4-mini":                           {window: 200000, vision: true, in: 1.1, out: 4.4},
	"google/gemini-2.5-pro":                    {window: 1048576, vision: true, in: 1.25, out: 10},
	"google/gemini-2.5-flash":                  {window: 1048576, vision: true, in: 0.3, out: 2.5},
	"google/gemini-2.5-flash-lite":             {window: 1048576, vision: true, in: 0.1, out: 0.4},
	"google/gemini-2.0-flash-001":              {window: 1048576, vision: true, in: 0.1, out: 0.4},
	"deepseek/deepseek-chat":                   {window: 163840, in: 0.3, out: 0.85},
	"deepseek/deepseek-r1":                     {window: 163840, in: 0.4, out: 2},
	"meta-llama/llama-3.3-70b-instruct":        {window: 131072, in: 0.13, out: 0.4},
	"qwen/qwen3-235b-a22b":                     {window: 131072, in: 0.13, out: 0.6},
	"mistralai/mistral-small-3.2-24b-instruct": {window: 131072, vision: true, in: 0.05, out: 0.1},
	// Local models: the window is the model's own, and every request
	// sends it as options.num_ctx (Ollama cuts a prompt at its num_ctx
	// without a word, 2,048–4,096 by default), so an owner whose machine
	// holds less sets context_window. They cost nothing unless the owner
	// prices them (a remote Ollama that bills).
	"ollama:qwen3:8b":        {window: 40960},
	"ollama:llama3.2":        {window: 131072},
	"ollama:llama3.2-vision": {window: 131072, vision: true},
	"ollama:gemma3":          {window: 131072, vision: true},
}
