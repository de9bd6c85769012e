package llm

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
}

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
	if k, ok := known[route]; ok {
		spec = k.spec()
	} else if r, err := ParseRoute(route); err == nil {
		switch r.Provider {
		case ProviderOpenRouter:
			if k, ok := known[r.Model]; ok {
				spec = k.spec()
			}
		case ProviderFake:
			spec.Price = &Price{} // the fakes are free
		}
	}
	if c == nil {
		return spec
	}
	o, ok := c.owner[route]
	if !ok {
		return spec
	}
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
	// Local models: the window is the model's own; Ollama cuts a prompt at
	// its num_ctx setting without a word, so an owner who keeps a smaller
	// num_ctx sets context_window. Their cost stays unknown unless the
	// owner prices them (0 is a price).
	"ollama:qwen3:8b":        {window: 40960},
	"ollama:llama3.2":        {window: 131072},
	"ollama:llama3.2-vision": {window: 131072, vision: true},
	"ollama:gemma3":          {window: 131072, vision: true},
}
