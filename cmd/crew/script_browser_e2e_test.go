package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// gatedMCP is an in-process MCP server on 127.0.0.1 whose two read-only
// tools each answer only once the test releases them.
func gatedMCP(t *testing.T) (url string, release map[string]chan struct{}) {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "gated", Version: "1"}, nil)
	release = map[string]chan struct{}{"slow": make(chan struct{}), "fast": make(chan struct{})}
	for name, ch := range release {
		srv.AddTool(&sdk.Tool{Name: name, Description: "answers when released", InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				select {
				case <-ch:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " answered"}}}, nil
			})
	}
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(func() {
		for _, ch := range release {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL, release
}

// R-SCR in the web UI: a script's nested call appears as a line on the
// chat's tool card and on the runs page's run card the moment it ends —
// while the other call of its batch still runs, with no reload of either
// page (both follow the server-sent events).
func TestBrowserScriptNestedCallsShowLive(t *testing.T) {
	ctx := newBrowser(t)
	url, release := gatedMCP(t)
	home := initHome(t)
	f, err := os.OpenFile(filepath.Join(home, "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	fmt.Fprintf(f, "\nmcp_servers:\n  g:\n    url: %s\n    read_only_tools: [slow, fast]\n", url)
	f.Close()
	f, err = os.OpenFile(filepath.Join(home, "agent.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	fmt.Fprintf(f, "\nmcp: [g]\n")
	f.Close()
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+writeScript(t, `
- tool_calls:
    - name: tool_script
      arguments: {script: "rs = tools.batch([(\"mcp__g__slow\", {}), (\"mcp__g__fast\", {})])\nprint(rs[0][\"output\"], rs[1][\"output\"])"}
- text: "both answered"
`))
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "run the batch"})
	id := acc["conversation_id"].(string)
	lines := `[...document.querySelectorAll('[data-testid="nested-call"]')].map((e) => e.textContent).join('|')`
	var runs context.Context
	for _, tab := range []struct {
		ctx  *context.Context
		path string
	}{{&ctx, "/c/" + id}, {&runs, "/c/" + id + "/runs"}} {
		if *tab.ctx == nil {
			*tab.ctx = newTab(t, ctx) // the browser runs by now
		}
		do(t, *tab.ctx, chromedp.Navigate(s.url+tab.path), chromedp.WaitReady(chromedp.CSS(`[data-testid="tool-card"]`)))
		if _, err := chromedp.Run(*tab.ctx, chromedp.Evaluate[int](`window.__loaded = 1`)); err != nil {
			t.Fatal(err)
		}
		if got, _ := chromedp.Run(*tab.ctx, chromedp.Evaluate[string](lines)); got != "" {
			t.Fatalf("%s shows calls before any ended: %q", tab.path, got)
		}
	}
	close(release["fast"])
	for _, tab := range []context.Context{ctx, runs} {
		waitJS(t, tab, s, "the fast call's line, live", lines+`.startsWith('2. mcp__g__fast') && window.__loaded === 1`)
	}
	close(release["slow"])
	waitJS(t, runs, s, "both lines in written order on the run card, live", lines+`.startsWith('1. mcp__g__slow') && `+lines+`.includes('|2. mcp__g__fast') && window.__loaded === 1`)
	waitJS(t, ctx, s, "the answer, live", `document.body.textContent.includes('both answered') && window.__loaded === 1`)
	s.stop(t)
}
