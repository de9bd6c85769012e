package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// RemoveWorktree asks the running server to remove worktree name (crew
// team worktree remove): the server holds the board and the teammates'
// folders. A refusal comes back as the server's message.
func (c Client) RemoveWorktree(ctx context.Context, name, team string, discard bool) (string, error) {
	body, _ := json.Marshal(map[string]any{"team": team, "discard": discard})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+"/api/worktrees/"+name+"/remove", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("ask the running server: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		Result string                   `json:"result"`
		Error  struct{ Message string } `json:"error"`
	}
	json.Unmarshal(raw, &out)
	if resp.StatusCode != http.StatusOK {
		if out.Error.Message != "" {
			return "", fmt.Errorf("%s", out.Error.Message)
		}
		return "", fmt.Errorf("the running server answered %s: %s", resp.Status, bytes.TrimSpace(raw))
	}
	return out.Result, nil
}
