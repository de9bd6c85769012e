// Package llm is the harness's model boundary: Model, with a typed Request
// (messages, tools, route, purpose, Payer, OnDelta) and Reply (text, tool
// calls, finish, Usage, CostUSD, the provider's request id); the providers
// behind it — routes ("provider:model"), an OpenAI-compatible streaming
// client used for OpenRouter and Ollama, the fake providers — classified
// errors and the rate-limit retry (Call). langchaingo is used inside this
// package only (adapter.go turns a Request into its types and its reply
// back); no other package imports it.
//
// # Why our own OpenAI-compatible client
//
// langchaingo v0.1.14's own clients are not fit for a tool-calling agent:
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
// arrival order, on the calling goroutine (Request.OnDelta). Deltas are
// for display: the reply that counts is the returned Reply.
//
// # The reply
//
// Reply: Text, ToolCalls (ids as the provider sent them; a missing id is
// generated; empty arguments become "{}"), Finish, Reasoning, Model (the
// model the server says answered), RequestID (the completion's id), Usage
// (zero when the provider reported none; Reasoning from
// completion_tokens_details, the cache from prompt_tokens_details or
// Anthropic's fields) and CostUSD.
//
// Cost is OpenRouter's usage.cost (requested with usage.include), else
// computed from Config.Prices when the model is listed. Otherwise CostUSD
// is nil: unknown cost is never 0. The fakes report cost 0 (they are
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
// YAML list of replies, one per call:
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
