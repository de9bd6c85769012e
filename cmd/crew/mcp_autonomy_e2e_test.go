package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// deletingMCP is an in-process MCP server on 127.0.0.1 with one tool that
// changes things, delete-all, which counts its calls.
func deletingMCP(t *testing.T) (url string, calls *atomic.Int32) {
	t.Helper()
	calls = &atomic.Int32{}
	srv := sdk.NewServer(&sdk.Implementation{Name: "gated", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "delete-all", Description: "deletes every note", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			calls.Add(1)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "deleted everything"}}}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	return ts.URL, calls
}

// runJob starts a job now and returns the conversation it opened.
func runJob(t *testing.T, url, id string) string {
	t.Helper()
	var before []map[string]any
	getJSON(t, url+"/api/jobs", &before)
	last := func(jobs []map[string]any) string {
		for _, j := range jobs {
			if j["id"] == id {
				s, _ := j["last_conversation"].(string)
				return s
			}
		}
		return ""
	}
	old := last(before)
	req, _ := http.NewRequest(http.MethodPost, url+"/api/jobs/"+id+"/run", bytes.NewReader(nil))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("run %s now = %v, %v", id, resp, err)
	}
	resp.Body.Close()
	var conv string
	eventstest.Eventually(t, "job "+id+" to open its conversation", func() bool {
		var jobs []map[string]any
		getJSON(t, url+"/api/jobs", &jobs)
		conv = last(jobs)
		return conv != "" && conv != old
	})
	return conv
}

// R-GATE-5 in autonomous seats (issue 26): an MCP tool the owner did not
// list in read_only_tools asks in a scheduled job — autonomous — with an
// ask reason on the card, against the reference server; the tool of a
// server set to autonomous: run runs unasked in the job and still asks in
// the supervised web conversation. (The teammate seat:
// TestTeamSeedRunOverHTTP, where bob's MCP call asks.)
func TestMCPAsksInAutonomousSeatsUnlessAutonomousRun(t *testing.T) {
	everything, _ := everythingServer(t)
	gated, deleted := deletingMCP(t)
	home := initHome(t)
	f, err := os.OpenFile(filepath.Join(home, "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	fmt.Fprintf(f, "\nmcp_servers:\n  everything:\n    url: %s\n    timeout_seconds: 20\n  gated:\n    url: %s\n    autonomous: run\n", everything, gated)
	f.Close()
	f, err = os.OpenFile(filepath.Join(home, "agent.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	fmt.Fprintf(f, "\nmcp: [everything, gated]\nschedules:\n  - name: echo\n    cron: \"0 7 * * *\"\n    prompt: \"echo it\"\n  - name: wipe\n    cron: \"0 8 * * *\"\n    prompt: \"wipe it\"\n")
	f.Close()
	model := &toolModel{}
	api := httptest.NewServer(model)
	defer api.Close()
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+api.URL+"/v1")

	// The job: autonomous, and echo asks all the same.
	model.queue(`call:tool_search {"names":["mcp__everything__echo"]}`, `call:mcp__everything__echo {"message":"from the job"}`, "text:echoed")
	id := runJob(t, s.url, "master-echo")
	c := waitConv(t, s.url, id, "the job waiting for the owner", func(c convView) bool { return c.Status == "awaiting_approval" })
	if len(c.PendingApprovals) != 1 || c.PendingApprovals[0].Tool != "mcp__everything__echo" {
		t.Fatalf("pending %+v, want echo to ask in the job", c.PendingApprovals)
	}
	if page := getText(t, s.url+"/c/"+id); !strings.Contains(page, "in every conversation") {
		t.Errorf("the job's approval card does not give the ask reason")
	}
	if reqs := model.requests(); !strings.Contains(reqs[len(reqs)-1].last, "the owner approves each call, in every conversation") {
		t.Errorf("tool_search told the model %q, want how the gate treats echo", reqs[len(reqs)-1].last)
	}
	if code, body := postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"}); code != 200 {
		t.Fatalf("approve = %d %v", code, body)
	}
	waitConv(t, s.url, id, "the job settled after echo", settled)
	if reqs := model.requests(); !strings.Contains(reqs[len(reqs)-1].last, "Echo: from the job") {
		t.Errorf("the model got %q, want the echo", reqs[len(reqs)-1].last)
	}

	// autonomous: run — the job runs delete-all unasked.
	model.queue(`call:tool_search {"names":["mcp__gated__delete-all"]}`, `call:mcp__gated__delete-all {}`, "text:wiped")
	id = runJob(t, s.url, "master-wipe")
	waitConv(t, s.url, id, "the job settled after delete-all", func(c convView) bool {
		if c.Status == "awaiting_approval" {
			t.Fatalf("delete-all asked in a job although its server is autonomous: run")
		}
		return settled(c)
	})
	if n := deleted.Load(); n != 1 {
		t.Errorf("delete-all ran %d times, want once", n)
	}
	if reqs := model.requests(); !strings.Contains(reqs[len(reqs)-2].last, "runs unasked in an autonomous one") {
		t.Errorf("tool_search told the model %q", reqs[len(reqs)-2].last)
	}

	// The same tool in the owner's supervised web conversation asks.
	model.queue(`call:tool_search {"names":["mcp__gated__delete-all"]}`, `call:mcp__gated__delete-all {}`, "text:wiped")
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "wipe it"})
	c = waitConv(t, s.url, acc["conversation_id"].(string), "awaiting approval", func(c convView) bool { return c.Status == "awaiting_approval" })
	if len(c.PendingApprovals) != 1 || c.PendingApprovals[0].Tool != "mcp__gated__delete-all" || deleted.Load() != 1 {
		t.Errorf("supervised: pending %+v, ran %d times", c.PendingApprovals, deleted.Load())
	}
	s.stop(t)
}
