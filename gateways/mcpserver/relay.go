package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Relay serves the crew's MCP tools over stdio — newline-delimited
// JSON-RPC on in and out (crew mcp serve) — by relaying to the running
// server's /mcp at endpoint with the bearer token: the tools it lists,
// their calls and their progress. It returns when the client closes in or
// ctx ends.
func Relay(ctx context.Context, endpoint, token, version string, in io.ReadCloser, out io.WriteCloser) error {
	var calls sync.Map // progress token → the stdio session that asked
	cl := sdk.NewClient(&sdk.Implementation{Name: "crew mcp serve", Version: version}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(ctx context.Context, r *sdk.ProgressNotificationClientRequest) {
			if ss, ok := calls.Load(r.Params.ProgressToken); ok {
				ss.(*sdk.ServerSession).NotifyProgress(ctx, r.Params)
			}
		},
	})
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{token}}, DisableStandaloneSSE: true},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return fmt.Errorf("reach the running crew's MCP endpoint %s: %w", endpoint, err)
	}
	defer cs.Close()
	init := cs.InitializeResult()
	srv := sdk.NewServer(&sdk.Implementation{Name: "my-agent-crew", Version: version}, &sdk.ServerOptions{Instructions: init.Instructions})
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the crew's MCP tools: %w", err)
		}
		srv.AddTool(tool, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			p := &sdk.CallToolParams{Name: req.Params.Name, Arguments: json.RawMessage(req.Params.Arguments)}
			if len(req.Params.Arguments) == 0 {
				p.Arguments = map[string]any{}
			}
			if tok := req.Params.GetProgressToken(); tok != nil {
				p.SetProgressToken(tok)
				calls.Store(tok, req.Session)
				defer calls.Delete(tok)
			}
			return cs.CallTool(ctx, p)
		})
	}
	return srv.Run(ctx, &sdk.IOTransport{Reader: in, Writer: out})
}

// bearer adds the token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
