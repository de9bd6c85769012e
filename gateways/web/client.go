package web

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/tools/mcp"
)

// Client asks a running server for what the CLI would otherwise read from
// the store, which the server holds: exports, recorded runs, health, and
// consolidation.
type Client struct {
	URL   string // the server's base URL, from serve.json
	Token string // the auth token, if the server has one
}

// get GETs path from the server and hands a 200 body to read.
func (c Client) get(ctx context.Context, path string, read func(io.Reader) error) error {
	url := c.URL + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("ask the running server: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return read(resp.Body)
}

// Export copies the conversation's export to w and verifies what arrives
// while copying it (keyed: the server holds the same audit key), so the
// count is the same as from the store.
func (c Client) Export(ctx context.Context, conv string, key []byte, w io.Writer) (int, error) {
	var n int
	err := c.get(ctx, "/api/conversations/"+conv+"/export", func(body io.Reader) error {
		pr, pw := io.Pipe()
		done := make(chan struct{})
		var verr error
		go func() {
			defer close(done)
			var v events.Verified
			v, verr = events.VerifyExport(pr, key)
			if verr == nil && !v.Proven {
				verr = errors.New("it is not keyed with this home's audit key")
			}
			n = v.Events
			io.Copy(io.Discard, pr)
		}()
		_, err := io.Copy(io.MultiWriter(w, pw), body)
		pw.CloseWithError(err)
		<-done
		if err != nil {
			return err
		}
		if verr != nil {
			return fmt.Errorf("the export arrived broken: %w", verr)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("export from running server: %w", err)
	}
	return n, nil
}

// RecordedRun returns the run's agent and what its replay reads
// (GET /api/runs/{id}/recorded: events.Recorded on the server's log).
func (c Client) RecordedRun(ctx context.Context, runID string) (string, []events.Envelope, error) {
	var run struct {
		Agent string `json:"agent"`
	}
	if err := c.get(ctx, "/api/runs/"+runID, func(r io.Reader) error { return json.NewDecoder(r).Decode(&run) }); err != nil {
		return "", nil, err
	}
	var envs []events.Envelope
	err := c.get(ctx, "/api/runs/"+runID+"/recorded", func(r io.Reader) (err error) {
		envs, err = events.ReadRecorded(r)
		return err
	})
	return run.Agent, envs, err
}

// MCP is GET /api/mcp: the running server's MCP servers as it has them.
func (c Client) MCP(ctx context.Context) ([]mcp.State, error) {
	var body struct {
		Servers []mcp.State `json:"servers"`
	}
	err := c.get(ctx, "/api/mcp", func(r io.Reader) error { return json.NewDecoder(r).Decode(&body) })
	return body.Servers, err
}

// RunningMCP is MCP within five seconds, as mcp.Report asks the running
// server: false when there is none at the client's URL (URL "") or it
// does not answer.
func (c Client) RunningMCP(ctx context.Context) ([]mcp.State, bool) {
	if c.URL == "" {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	states, err := c.MCP(ctx)
	return states, err == nil
}

// Running is doctor's line naming the crew serve at the client's URL, its
// pid and the address it listens on, as it wrote them at start; none when
// none answers there.
func (c Client) Running(ctx context.Context, pid int, listen string) []string {
	if c.URL == "" || !c.Answers(ctx) {
		return nil
	}
	return []string{fmt.Sprintf("server: crew serve (pid %d) listens on %s: %s", pid, cmp.Or(listen, "?"), c.URL)}
}

// HeldBy is doctor's lines on a store that the crew serve of pid at the
// client's URL holds: which, then what its /healthz says (HealthLines).
func (c Client) HeldBy(ctx context.Context, pid int) []string {
	return append([]string{fmt.Sprintf("  held by crew serve (pid %d) at %s", pid, c.URL)}, c.HealthLines(ctx)...)
}

// HealthReport is /healthz as the running server answers it.
type HealthReport struct {
	Status      string               `json:"status"`
	Projections []projections.Status `json:"projections"`
	// Turns is the turn worker's counters; nil from a server without a
	// worker.
	Turns *view.WorkerStats `json:"turns"`
	// Cluster is the crew process's counters on a shared cluster; nil
	// on the embedded server.
	Cluster *view.ClusterStats `json:"cluster"`
}

// Health is /healthz: the server's status, its projections and its turn
// worker.
func (c Client) Health(ctx context.Context) (HealthReport, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return HealthReport{}, err
	}
	defer resp.Body.Close()
	var body struct {
		Status  string       `json:"status"`
		Details HealthReport `json:"details"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return HealthReport{}, fmt.Errorf("%s, unreadable body: %w", resp.Status, err)
	}
	h := body.Details
	h.Status = body.Status
	return h, nil
}

// HealthLines are doctor's lines of the server's /healthz: its status,
// each projection's checkpoint and lag, and the turn worker's counters;
// a server that does not answer within five seconds is one line saying
// why.
func (c Client) HealthLines(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	h, err := c.Health(ctx)
	if err != nil {
		return []string{fmt.Sprintf("  /healthz: %v", err)}
	}
	return h.Lines()
}

// Lines are doctor's lines of the report.
func (h HealthReport) Lines() []string {
	lines := []string{"  /healthz: " + h.Status}
	for _, p := range h.Projections {
		stopped := ""
		if p.Error != "" {
			stopped = ", stopped: " + p.Error
		}
		lines = append(lines, fmt.Sprintf("  projection %s: at %d, lag %d%s", p.Name, p.Checkpoint, p.Lag, stopped))
	}
	if t := h.Turns; t != nil {
		line := fmt.Sprintf("  turns: %d in flight (turns_in_flight %d), %d queued, %d waiting to retry, %d failed passes since start",
			t.InFlight, t.Limit, t.Queued, t.Retrying, t.FailedPasses)
		if t.FailedPasses > 0 {
			line += " (each is in the server's log at warn: \"turn pass failed\")"
		}
		lines = append(lines, line)
	}
	if c := h.Cluster; c != nil {
		line := fmt.Sprintf("  cluster: %d failed looks for conversations to adopt since start", c.AdoptFailures)
		if c.AdoptFailures > 0 {
			line += " (each is in the server's log at warn; the last: " + c.LastAdoptError + ")"
		}
		lines = append(lines, line)
	}
	return lines
}

// Answers says whether a server answers /healthz at the client's URL
// within three seconds, whatever its status.
func (c Client) Answers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

// Consolidate asks the server to file a memory proposal for agent, as
// crew memory consolidate does (trigger cli).
func (c Client) Consolidate(ctx context.Context, agent string) (view.Proposal, error) {
	var p view.Proposal
	body, _ := json.Marshal(map[string]string{"agent": agent, "trigger": view.TriggerCLI})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+"/api/memory/consolidate", bytes.NewReader(body))
	if err != nil {
		return p, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return p, fmt.Errorf("ask the running server: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return p, fmt.Errorf("ask the running server: %w", err)
	}
	if resp.StatusCode != http.StatusCreated {
		var apiErr struct {
			Error struct{ Message string } `json:"error"`
		}
		if json.Unmarshal(raw, &apiErr) == nil && apiErr.Error.Message != "" {
			return p, fmt.Errorf("the running server answered %s: %s", resp.Status, apiErr.Error.Message)
		}
		return p, fmt.Errorf("the running server answered %s: %s", resp.Status, bytes.TrimSpace(raw))
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, fmt.Errorf("read the server's proposal: %w", err)
	}
	return p, nil
}

// Stop asks the server to stop conversation (scope run, queue or all; ""
// is all), by cli, as crew stop does; conversation "" stops every running
// conversation of the home (POST /api/stop). It returns what was stopped:
// the one conversation, or every conversation stopped.
func (c Client) Stop(ctx context.Context, conversation, scope string) ([]inbound.StoppedConversation, error) {
	path, body := "/api/stop", map[string]string{"by": events.StopByCLI}
	if conversation != "" {
		path = "/api/conversations/" + conversation + "/stop"
		body["scope"] = scope
	}
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+path, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask the running server: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("ask the running server: %w", err)
	}
	if resp.StatusCode != http.StatusAccepted {
		var apiErr struct {
			Error struct{ Message string } `json:"error"`
		}
		if json.Unmarshal(out, &apiErr) == nil && apiErr.Error.Message != "" {
			return nil, fmt.Errorf("the running server answered %s: %s", resp.Status, apiErr.Error.Message)
		}
		return nil, fmt.Errorf("the running server answered %s: %s", resp.Status, bytes.TrimSpace(out))
	}
	var all struct{ Stopped []inbound.StoppedConversation }
	one := inbound.StoppedConversation{Conversation: conversation}
	if conversation == "" {
		err = json.Unmarshal(out, &all)
	} else if err = json.Unmarshal(out, &one.Stopped); err == nil {
		all.Stopped = append(all.Stopped, one)
	}
	if err != nil {
		return nil, fmt.Errorf("read the server's answer: %w", err)
	}
	return all.Stopped, nil
}
