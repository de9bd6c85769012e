// Package llm provides the model providers behind langchaingo's llms.Model:
// routes ("provider:model"), an OpenAI-compatible streaming client used for
// OpenRouter and Ollama, the fake providers, classified errors and the
// rate-limit retry (Call).
//
// # Why our own OpenAI-compatible client
//
// The loop talks to models through llms.Model, but langchaingo v0.1.14's
// own clients are not fit for a tool-calling agent:
//
//   - its openai streaming appends every tool-call argument delta to the
//     last call, ignoring the delta's index, so interleaved parallel calls
//     come out corrupt;
//   - servers that repeat "type":"function" on every delta make it start a
//     new, nameless call each time;
//   - tool-call JSON is delivered through the same streaming callback as
//     the text, so the UI cannot tell them apart;
//   - it sends temperature 0 when the caller set none, overriding the
//     model's default;
//   - the base URL must end in /v1;
//   - its ollama client silently drops tools.
//
// Client implements POST /chat/completions with net/http and encoding/json.
// Ollama is reached through its OpenAI-compatible /v1 endpoint.
//
// # Streaming and deltas
//
// Every call streams (stream_options.include_usage). Tool calls are
// assembled by the delta's index: id and name come from the first delta
// carrying them, arguments are concatenated per index, a repeated type
// field changes nothing. A provider that omits the index or reuses one
// index for calls with different ids still gets one call per id. WithDeltas
// receives text deltas and tool-call argument deltas separately and in
// arrival order, on the calling goroutine; llms.WithStreamingFunc receives
// text only. Deltas are for display: the reply that counts is the returned
// *llms.ContentResponse.
//
// # The reply
//
// One choice: Content, ToolCalls (ids as the provider sent them; a missing
// id is generated; empty arguments become "{}"), StopReason and
// GenerationInfo with:
//
//	PromptTokens, CompletionTokens, TotalTokens  int      when the provider reported usage
//	CostUSD                                      float64  only when known
//	Model                                        string   the model the server says answered
//
// Cost is OpenRouter's usage.cost (requested with usage.include), else
// computed from Config.Prices when the model is listed. Otherwise the key
// is absent: unknown cost is never 0. The fakes report cost 0 (they are
// free) unless a script says cost_unknown.
//
// # Errors
//
// Failures are *Error values matching one sentinel with errors.Is:
// ErrRateLimited (429, with RetryAfter), ErrUnavailable (5xx, overloaded,
// connection errors, timeouts, a stream that broke off or went silent for
// ClientConfig.IdleTimeout), ErrContextTooLong, ErrPermanent (other 4xx, a
// missing key). Cancelling ctx returns ctx's error, unclassified. Call
// retries ErrRateLimited up to MaxRateLimitRetries times (Retry-After or
// Backoff) and returns everything else at once; falling back to the next
// route is the loop's decision.
//
// # Fake providers
//
// fake:echo answers "echo: <last user text>". fake:script:<file> plays a
// YAML list of replies, one per GenerateContent call:
//
//	# turn.yaml
//	- text: "Let me write that."           # streamed in a few chunks
//	  tool_calls:                           # may combine with text
//	    - name: workspace_write
//	      arguments: {path: a.txt, content: hi}   # mapping, or a raw JSON string
//	      id: call_1                        # optional
//	  usage: {input: 10, output: 5, cost_usd: 0.001}   # or cost_unknown: true
//	- error: 429                            # 4xx/5xx, timeout, context_too_long or a message
//	  retry_after: 2s                       # with 429: the Retry-After the provider sent
//	  delay: 200ms                          # any entry: wait before answering
//	- text: "The first half of a long"
//	  finish: length                        # finish_reason (stop or length): cut at max_tokens
//	- text: "done"
//
// An entry with error and text (or tool_calls) streams those deltas first,
// then fails: "text was shown before the failure". A free-text error is
// classified like a provider message (default ErrUnavailable). Default tool
// call ids are derived from the messages sent and the call number:
// deterministic, yet different when a restarted script replays into a
// longer history. The file is decoded strictly; every problem reads
// "file:line:col: message". Running past the end fails with ErrPermanent
// naming the file and the call number.
//
// The cursor is a counter inside ScriptModel: each call takes the next
// entry, failed and cancelled calls included. Providers.Model returns a new
// ScriptModel on every call, so the server keeps one model per route for
// the process lifetime (the script then runs across turns and
// conversations in call order). A new ScriptModel sets its counter on its
// first call from the history it is sent: it skips one successful entry per
// assistant message already there. So a restarted server resumes a
// conversation where the script left off, and a script first used on a new
// conversation starts at its first entry.
package llm
