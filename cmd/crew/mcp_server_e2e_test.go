package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/my-agent-crew/crew/cmd/crew/home"
)

// bearerRT adds a bearer token to every request of an MCP client.
type bearerRT string

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// R-X-15: the crew as an MCP server, through real crew serve, with the
// SDK's client: /mcp refuses a request without the home's bearer token
// (loopback too); tools/list has the crew_* tools; crew_send is answered
// with the reply and stored as a message on channel mcp from the client's
// name; a long run is answered with its ids after progress; a run that
// needs approval says so (nothing approves over MCP); crew_status,
// crew_read, crew_conversations and crew_stop see and stop it.
func TestCrewAsMCPServerThroughServe(t *testing.T) {
	h := initHome(t)
	model := &toolModel{}
	api := httptest.NewServer(model)
	defer api.Close()
	s := startServe(t, h, "MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+api.URL+"/v1")
	defer s.stop(t)
	env, err := home.ReadEnvFile(filepath.Join(h, "env"))
	must(t, err)
	token := env[home.AuthTokenVar]
	// serve prints the /mcp line after "crew is serving on", which is
	// what startServe waits for: read on until it is there.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(s.stdout.String(), s.url+"/mcp") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // polling an external process
	}
	if len(token) < 32 || !strings.Contains(s.stdout.String(), s.url+"/mcp") {
		t.Fatalf("no %s in the env file (%d chars) or no /mcp line in serve's output:\n%s", home.AuthTokenVar, len(token), s.stdout)
	}
	// The web UI on loopback stays open; /mcp never is.
	if code := getJSON(t, s.url+"/api/conversations", &[]any{}); code != 200 {
		t.Errorf("GET /api/conversations on loopback = %d, want 200 without a token", code)
	}
	for _, auth := range []string{"", "Bearer wrong-token", "Basic " + token, "Bearer " + token + "x"} {
		req, _ := http.NewRequest("POST", s.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST /mcp with %q = %d, want 401", auth, resp.StatusCode)
		}
	}

	var mu sync.Mutex
	var progress []string
	cl := sdk.NewClient(&sdk.Implementation{Name: "crew-test-client", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, r.Params.Message)
			mu.Unlock()
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: bearerRT(token)}}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	defer cs.Close()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		must(t, err)
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"crew_conversations", "crew_read", "crew_send", "crew_status", "crew_stop"}; !slices.Equal(names, want) {
		t.Fatalf("tools/list = %v, want %v", names, want)
	}
	call := func(name string, args map[string]any, progressToken any) (string, map[string]any, bool) {
		t.Helper()
		p := &sdk.CallToolParams{Name: name, Arguments: args}
		if progressToken != nil {
			p.SetProgressToken(progressToken)
		}
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var text string
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				text += tc.Text
			}
		}
		var structured map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &structured)
		return text, structured, res.IsError
	}

	model.queue("text:Hello from the crew.")
	got, out, isErr := call("crew_send", map[string]any{"text": "hello crew"}, nil)
	if isErr || got != "Hello from the crew." || out["status"] != "done" || out["conversation_id"] == "" {
		t.Fatalf("crew_send = %q %v (error %v)", got, out, isErr)
	}
	conv := out["conversation_id"].(string)
	// Read right after crew_send answered: the listing and the read see
	// what crew_send saw (the run ended), not the projections a lingering
	// batch behind.
	got, out, isErr = call("crew_conversations", map[string]any{"query": conv}, nil)
	if rows, _ := out["conversations"].([]any); isErr || len(rows) != 1 || rows[0].(map[string]any)["status"] != "idle" {
		t.Errorf("crew_conversations right after crew_send = %q %v (error %v), want %s idle", got, out, isErr, conv)
	}
	if got, out, isErr = call("crew_read", map[string]any{"conversation": conv}, nil); isErr || !strings.Contains(got, "Hello from the crew.") {
		t.Errorf("crew_read right after crew_send = %q %v (error %v)", got, out, isErr)
	}
	var c struct{ Channel string }
	getJSON(t, s.url+"/api/conversations/"+conv, &c)
	if c.Channel != "mcp" {
		t.Errorf("the conversation's channel is %q, want mcp", c.Channel)
	}
	exported, _, _ := crew(t, h, "export", conv)
	if !strings.Contains(exported, `"channel":"mcp"`) || !strings.Contains(exported, `"from":"crew-test-client"`) {
		t.Errorf("the stored message does not carry channel mcp from the client's name:\n%s", exported)
	}

	// A long run: the answer is its ids, after progress.
	model.queue(`call:memory_search {"query":"heating"}`, "slow:4000:text:done at last")
	got, out, _ = call("crew_send", map[string]any{"text": "look it up", "conversation": conv, "timeout_seconds": 2}, "p1")
	if out["status"] != "running" || out["run_id"] == "" || !strings.Contains(got, "Still running") || !strings.Contains(got, conv) {
		t.Errorf("a long run: %q %v", got, out)
	}
	mu.Lock()
	if !slices.ContainsFunc(progress, func(p string) bool { return strings.Contains(p, "memory_search") }) {
		t.Errorf("progress %q does not name the step's tool", progress)
	}
	mu.Unlock()
	waitConv(t, s.url, conv, "the long run settled", settled)
	got, out, _ = call("crew_read", map[string]any{"conversation": conv}, nil)
	if msgs, _ := out["messages"].([]any); len(msgs) < 4 || !strings.Contains(got, "done at last") || !strings.Contains(got, "look it up") {
		t.Errorf("crew_read = %q", got)
	}
	next := int(out["next"].(float64))
	if got, out, _ = call("crew_read", map[string]any{"conversation": conv, "since": next}, nil); len(out["messages"].([]any)) != 0 {
		t.Errorf("crew_read since next = %q", got)
	}

	// A run that needs the owner's approval says so, and waits for them.
	model.queue(`call:shell_run {"command":"echo hi"}`, "text:ran it")
	got, out, _ = call("crew_send", map[string]any{"text": "run echo", "conversation": conv}, nil)
	if out["status"] != "awaiting_approval" || !strings.Contains(got, "approval of shell_run") || !strings.Contains(got, "web or Telegram") {
		t.Errorf("a run that needs approval: %q %v", got, out)
	}
	got, out, _ = call("crew_status", map[string]any{"conversation": conv}, nil)
	if out["status"] != "awaiting_approval" || !strings.Contains(got, "approval of shell_run") {
		t.Errorf("crew_status = %q %v", got, out)
	}
	if got, _, isErr := call("crew_send", map[string]any{"text": "another", "conversation": conv}, nil); !isErr || !strings.Contains(got, "approval") {
		t.Errorf("crew_send while an approval waits = %q (error %v)", got, isErr)
	}
	got, out, _ = call("crew_conversations", map[string]any{"query": "mcp"}, nil)
	if !strings.Contains(got, conv) {
		t.Errorf("crew_conversations = %q", got)
	}
	if got, _, isErr := call("crew_stop", map[string]any{"conversation": conv}, nil); isErr || !strings.Contains(got, "Stopped") {
		t.Errorf("crew_stop = %q (error %v)", got, isErr)
	}
	waitConv(t, s.url, conv, "stopped", func(c convView) bool { return len(c.ActiveRuns) == 0 && len(c.PendingApprovals) == 0 })
	exported, _, _ = crew(t, h, "export", conv)
	if !strings.Contains(exported, `"by":"mcp"`) {
		t.Errorf("the stop is not stored as by mcp")
	}
	if got, _, isErr := call("crew_status", map[string]any{"conversation": "nope"}, nil); !isErr || !strings.Contains(got, "Not found") {
		t.Errorf("crew_status of an unknown conversation = %q", got)
	}
}

// The official inspector's CLI (pinned in .ci/npm) against /mcp, and
// against crew mcp serve on stdio, which relays to the running server; with
// no server running, crew mcp serve refuses and says why.
func TestCrewAsMCPServerWithTheInspectorCLI(t *testing.T) {
	cli, _ := filepath.Abs("../../.ci/npm/node_modules/@modelcontextprotocol/inspector-cli/build/index.js")
	if _, err := os.Stat(cli); err != nil {
		t.Skipf("inspector-cli not installed at %s: run .ci/run once (npm install)", cli)
	}
	h := initHome(t)
	if _, errOut, code := crew(t, h, "mcp", "serve"); code == 0 || !strings.Contains(errOut, "no crew serve runs") {
		t.Errorf("crew mcp serve with no server = %d: %s", code, errOut)
	}
	model := &toolModel{}
	api := httptest.NewServer(model)
	defer api.Close()
	s := startServe(t, h, "MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+api.URL+"/v1")
	defer s.stop(t)
	env, err := home.ReadEnvFile(filepath.Join(h, "env"))
	must(t, err)
	inspect := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", append([]string{cli}, args...)...)
		cmd.Env = append(cmd.Environ(), "CREW_HOME="+h)
		cmd.Dir = filepath.Dir(cli) // it finds its package.json from the working directory
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("inspector-cli %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := inspect(s.url+"/mcp", "--transport", "http", "--header", "Authorization: Bearer "+env[home.AuthTokenVar], "--method", "tools/list")
	if !strings.Contains(out, `"crew_send"`) || !strings.Contains(out, `"crew_read"`) {
		t.Errorf("tools/list over HTTP:\n%s", out)
	}
	model.queue("text:Relayed reply.")
	out = inspect(crewBin, "mcp", "serve", "--method", "tools/call", "--tool-name", "crew_send", "--tool-arg", "text=hello over stdio")
	if !strings.Contains(out, "Relayed reply.") || !strings.Contains(out, `"status": "done"`) {
		t.Errorf("crew_send over crew mcp serve:\n%s", out)
	}
}
