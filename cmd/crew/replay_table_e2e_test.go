package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/faults"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// rowModel is an OpenAI-compatible server that plays one script per row
// of the replay table. A request belongs to the row its agent's persona
// names (ROW-AGENT:<row>), to alice when its system prompt seats the
// teammate alice, or else to the row the conversation's first owner message
// names (⟦row:<row>⟧); each row's replies are played in order. The
// harness's own summary requests get a summary.
type rowModel struct {
	mu      sync.Mutex
	replies map[string][]string // "text:<words>" or "call:<name> <json args>"; {task} is the latest task id seen
	cost    map[string]float64  // the cost each reply of the row reports (0: 0.0001)
	n       map[string]int
	log     []string // row#reply of each request, for a failure's report
	// hold, when set for a row, holds that reply of the row until release
	// is closed, after saying so on held.
	hold    map[string]int
	held    chan string
	release chan struct{}
	// slowed says a request reached /slow, which answers only when its
	// client goes (a fetch the owner's stop cuts).
	slowed chan struct{}
}

var (
	rowMark  = regexp.MustCompile(`⟦row:([a-z_]+)⟧`)
	rowAgent = regexp.MustCompile(`ROW-AGENT:([a-z_]+)`)
	taskID   = regexp.MustCompile(`task_[0-9a-f]+`)
)

func newRowModel() *rowModel {
	return &rowModel{replies: map[string][]string{}, cost: map[string]float64{}, n: map[string]int{}, hold: map[string]int{},
		held: make(chan string, 1), release: make(chan struct{}), slowed: make(chan struct{}, 4)}
}

func (m *rowModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/slow" {
		m.slowed <- struct{}{}
		<-r.Context().Done()
		return
	}
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", 400)
		return
	}
	texts := make([]string, len(req.Messages))
	for i, msg := range req.Messages {
		texts[i] = contentText(msg.Content)
	}
	system := ""
	if req.Messages[0].Role == "system" {
		system = texts[0]
	}
	row := ""
	switch {
	case strings.HasPrefix(system, "You condense"):
		row = "summary"
	case rowAgent.MatchString(system):
		row = rowAgent.FindStringSubmatch(system)[1]
	case strings.Contains(system, "# Your team\n\nYou are alice,"):
		row = "alice"
	default:
		// The owner's words come last in a message the turn notes open
		// (which may quote an earlier row's).
		for i, msg := range req.Messages {
			if all := rowMark.FindAllStringSubmatch(texts[i], -1); msg.Role == "user" && len(all) > 0 {
				row = all[len(all)-1][1]
				break
			}
		}
	}
	m.mu.Lock()
	i := m.n[row]
	m.n[row]++
	m.log = append(m.log, fmt.Sprintf("%s#%d", row, i))
	reply := "text:done"
	if row == "summary" {
		reply = "text:The assistant read the files it was asked for; nothing is left to do."
	} else if i < len(m.replies[row]) {
		reply = m.replies[row][i]
	}
	cost := m.cost[row]
	hold, holds := m.hold[row]
	m.mu.Unlock()
	if cost == 0 {
		cost = 0.0001
	}
	if holds && hold == i {
		m.held <- row
		<-m.release
	}
	if ids := taskID.FindAllString(strings.Join(texts, "\n"), -1); len(ids) > 0 {
		reply = strings.ReplaceAll(reply, "{task}", ids[len(ids)-1])
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	if words, ok := strings.CutPrefix(reply, "text:"); ok {
		chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": words}, "finish_reason": "stop"}}})
	} else {
		name, args, _ := strings.Cut(strings.TrimPrefix(reply, "call:"), " ")
		chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "delta": map[string]any{"tool_calls": []any{
			map[string]any{"index": 0, "id": fmt.Sprintf("call_%s_%d", row, i), "type": "function", "function": map[string]any{"name": name, "arguments": args}}}}}}})
	}
	// No prompt_tokens: the harness's estimate is what compaction decides
	// on, uncalibrated, so the table's window sizes hold.
	chunk(map[string]any{"choices": []any{}, "usage": map[string]any{"completion_tokens": 2, "cost": cost}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// replayRow is one feature of the replay table: what the owner says (to
// which agent), what the model replies, and how the test drives the run.
type replayRow struct {
	name    string
	agent   string // "" is the master
	text    string
	replies []string
	cost    float64
	// drive takes the conversation from the message to settled; nil
	// approves every card until the conversation is quiet.
	drive func(t *testing.T, s *server, id string)
	// shows are what the recorded conversation must hold (in its export),
	// so the row records the feature it names.
	shows []string
	// skip, when set, is why the row cannot run on this machine.
	skip string
}

// quiet: no run open, nothing queued or waiting, a run finished.
func quiet(c convView) bool {
	switch c.Status {
	case "running", "awaiting_approval", "awaiting_answer", "":
		return false
	}
	return c.Queued == 0 && c.LastRunID != "" && len(c.ActiveRuns) == 0 && len(c.PendingApprovals) == 0
}

// driveApproving approves every card until the conversation is quiet.
func driveApproving(decision string) func(t *testing.T, s *server, id string) {
	return func(t *testing.T, s *server, id string) {
		waitConv(t, s.url, id, "quiet, deciding every card "+decision, func(c convView) bool {
			for _, p := range c.PendingApprovals {
				postJSON(t, s.url+"/api/approvals/"+p.ID, map[string]any{"decision": decision})
			}
			return quiet(c)
		})
	}
}

// replayHome writes the table's crew: the master on the scripted model and
// one agent per row that needs settings of its own.
func replayHome(t *testing.T, mcpURL string) string {
	t.Helper()
	home := initHome(t)
	p := filepath.Join(home, "agent.yaml")
	b, err := os.ReadFile(p)
	must(t, err)
	must(t, os.WriteFile(p, []byte(strings.Replace(string(b), "routes: [fake:echo]", "routes: [openrouter:vendor/model]", 1)), 0o600))
	tools := "tools: [workspace_list, workspace_glob, workspace_grep, workspace_read, workspace_write]\n"
	agent := func(id, row, yaml string) {
		putAgent(t, home, id, "name: "+id+"\ndescription: the replay table's "+row+" row\n"+yaml, "ROW-AGENT:"+row+"\nYou do what you are asked.\n")
		must(t, os.MkdirAll(filepath.Join(home, "agents", id, "workspace"), 0o700))
	}
	agent("compaction", "compaction", "routes: [openrouter:vendor/small]\ntools: [workspace_read]\n")
	agent("budget", "budget", "routes: [openrouter:vendor/model]\ndaily_cap_usd: 0.06\n"+tools)
	agent("cost_cap", "cost_cap", "routes: [openrouter:vendor/model]\ncost_cap_usd: 0.00015\n"+tools)
	agent("script_gated", "script_gated", "routes: [openrouter:vendor/model]\nscript_calls: gated\n"+tools)
	agent("computer_act", "refused_computer_act", "routes: [openrouter:vendor/model]\ncomputer: \"on\"\ncomputer_apps: [xterm]\ntools: [workspace_list]\n")
	// Priced, so a reservation is what the request's tokens cost and the
	// cost cap, not the reservation, halts the cost_cap row.
	config := "\nmodels:\n  openrouter:vendor/small:\n    context_window: 9000\n    max_output_tokens: 1000\n" +
		"  openrouter:vendor/model:\n    max_output_tokens: 1000\n    input_usd_per_mtok: 0.01\n    output_usd_per_mtok: 0\n"
	if mcpURL != "" {
		// No read-only tool: tool_script is not offered, so the MCP set a
		// replay knows (the declared tools) is all the turn reads.
		agent("mcp", "mcp_tool_search", "routes: [openrouter:vendor/model]\nmcp: [everything]\ntools: [workspace_write]\n")
		config += "mcp_servers:\n  everything:\n    url: " + mcpURL + "\n    timeout_seconds: 20\n"
	}
	f, err := os.OpenFile(filepath.Join(home, "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString(config)
	must(t, err)
	f.Close()
	ws := filepath.Join(home, "agents", "compaction", "workspace")
	for i := 1; i <= 6; i++ {
		line := fmt.Sprintf("file %d: the quick brown fox jumps over the lazy dog.\n", i)
		must(t, os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", i)), []byte(strings.Repeat(line, 4500/len(line))), 0o600))
	}
	return home
}

// R-OBS-3 across every feature the loop decides on: each row's run is
// recorded through a real crew serve on a scripted OpenAI-compatible model
// and replayed with crew replay on the stopped home — with another
// MY_AGENT_ROUTES than the recording's, so the replay reads neither the
// routes nor the prompt files of today — and comes out identical. An
// injected change names the first divergent step: a smaller context
// window (the compaction threshold), and a build whose loop guard reminds
// after two repeats instead of three.
func TestReplayTableEveryFeature(t *testing.T) {
	model := newRowModel()
	api := httptest.NewServer(model)
	defer api.Close()
	mcpURL, mcpSkip := "", ""
	if js, _ := filepath.Abs("../../.ci/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"); fileExists(js) {
		mcpURL, _ = everythingServer(t)
	} else {
		mcpSkip = "server-everything not installed: run .ci/run once (npm install)"
	}
	home := replayHome(t, mcpURL)
	// The changed guard is a build of its own: it compiles while the rows
	// are recorded.
	bin := filepath.Join(t.TempDir(), "crew-guard2")
	built := make(chan error, 1)
	go func() {
		out, err := exec.Command("go", "build", "-tags", "crewtest,crewtest_guard2", "-o", bin, ".").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("build with the changed guard: %v\n%s", err, out)
		}
		built <- err
	}()
	t.Cleanup(func() {
		if t.Failed() {
			model.mu.Lock()
			t.Logf("the model's requests: %s", strings.Join(model.log, " "))
			model.mu.Unlock()
		}
	})
	// The wall lets fetch_url reach the model's server (its /slow page) in
	// the recording only: a replay answers each call's Check as recorded.
	env := []string{"OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL=" + api.URL + "/v1", "CREW_TEST_ALLOW_ADDRS=" + strings.TrimPrefix(api.URL, "http://")}
	// stopWhileSlow stops the conversation once its fetch of /slow runs.
	stopWhileSlow := func(t *testing.T, s *server, id string) {
		select {
		case <-model.slowed:
		case <-time.After(60 * time.Second):
			t.Fatal("the fetch of /slow never came")
		}
		if code, body := postStop(t, s.url+"/api/conversations/"+id+"/stop", map[string]any{}); code != 202 && code != 200 {
			t.Fatalf("stop = %d %v", code, body)
		}
		waitConv(t, s.url, id, "quiet after the stop", quiet)
	}
	slow := strconv.Quote(api.URL + "/slow")

	var teammateConv string // the teammate's conversation, once the team ran
	big := strings.Repeat("Here is more of the background you asked me to keep in mind. ", 150)
	rows := []replayRow{
		{name: "crash_resumed", text: "list the workspace", shows: []string{`"type":"run_resumed"`, `"outcome":"interrupted"`}, replies: []string{`call:workspace_list {"path":"."}`, "text:Listed after the restart."}},
		{name: "gate_approved", text: "write a", shows: []string{`"type":"approval_requested"`, `"decision":"approved"`}, replies: []string{`call:workspace_write {"path":"a.txt","content":"a\n"}`, "text:Wrote a."}},
		{name: "gate_denied", text: "write b", shows: []string{`"type":"approval_requested"`, `"decision":"denied"`}, replies: []string{`call:workspace_write {"path":"b.txt","content":"b\n"}`, "text:Not written."},
			drive: driveApproving("deny")},
		{name: "guard", text: "list again and again", shows: []string{`"type":"guard_reminded"`}, replies: []string{
			`call:workspace_list {"path":"."}`, `call:workspace_list {"path":"."}`, `call:workspace_list {"path":"."}`,
			`call:workspace_list {"path":"."}`, "text:Stopped repeating."}},
		{name: "compaction", agent: "compaction", text: "read f1 to f4", shows: []string{`"stage":"micro"`, `"stage":"summary"`, `"purpose":"compaction"`},
			replies: []string{`call:workspace_read {"path":"f1.txt"}`, `call:workspace_read {"path":"f2.txt"}`, `call:workspace_read {"path":"f3.txt"}`,
				`call:workspace_read {"path":"f4.txt"}`, "text:Read four.",
				`call:workspace_read {"path":"f5.txt"}`, `call:workspace_read {"path":"f6.txt"}`, `call:workspace_read {"path":"f2.txt"}`, "text:Read three more.",
				"text:Noted the background."},
			drive: func(t *testing.T, s *server, id string) {
				// The first turn's reads go over the window: micro. The
				// third turn's message, with the second turn's results kept
				// whole, is over it again: the first turn is summarised.
				for i, text := range []string{"", "now read f5, f6 and f2 again", big} {
					if text != "" {
						postJSON(t, s.url+"/api/inbound", map[string]any{"text": text, "conversation_id": id})
					}
					driveApproving("approve")(t, s, id)
					finishedRuns(t, s.url, id, i+1)
				}
			}},
		{name: "budget", agent: "budget", text: "look around", cost: 0.03, shows: []string{`"reason":"budget"`}, replies: []string{
			`call:workspace_list {"path":"."}`, `call:workspace_glob {"pattern":"*.txt"}`, "text:Looked."}},
		{name: "cost_cap", agent: "cost_cap", text: "look around", shows: []string{`"reason":"cost_cap"`}, replies: []string{
			`call:workspace_list {"path":"."}`, `call:workspace_glob {"pattern":"*.txt"}`, `call:workspace_grep {"pattern":"fox"}`, "text:Looked."}},
		{name: "steer", text: "list, then glob", shows: []string{`"type":"steer_received"`, `"type":"steers_applied"`}, replies: []string{`call:workspace_list {"path":"."}`, `call:workspace_glob {"pattern":"*.txt"}`, "text:Did both, and took your note."},
			drive: func(t *testing.T, s *server, id string) {
				select { // the second model call waits for the steer
				case <-model.held:
				case <-time.After(60 * time.Second):
					t.Fatal("the steer row's second model call never came")
				}
				if code, body := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "/steer only .txt files", "conversation_id": id}); code != 202 {
					t.Fatalf("steer = %d %v", code, body)
				}
				close(model.release)
				driveApproving("approve")(t, s, id)
			}},
		{name: "script_read_only", text: "script a listing", shows: []string{`"type":"nested_call"`, "workspace_write cannot be called from a script"}, replies: []string{
			`call:tool_script {"script":"print(tools.call(\"workspace_list\", path=\".\")[\"output\"])\nprint(tools.call(\"workspace_write\", path=\"s.txt\", content=\"s\")[\"error\"])"}`,
			"text:Scripted."}},
		{name: "script_gated", agent: "script_gated", text: "script a write", shows: []string{`"type":"nested_call"`, "STOP: workspace_write needs the owner's approval"}, replies: []string{
			`call:tool_script {"script":"print(tools.call(\"workspace_glob\", pattern=\"*.txt\")[\"output\"])\nprint(tools.call(\"workspace_write\", path=\"g.txt\", content=\"g\"))"}`,
			"text:The script stopped at the write."}},
		{name: "mcp_tool_search", agent: "mcp", text: "find the echo tool", skip: mcpSkip, shows: []string{`"declared"`, "Echo: hello mcp"}, replies: []string{
			`call:tool_search {"query":"echo"}`, `call:mcp__everything__echo {"message":"hello mcp"}`, "text:Echoed."}},
		{name: "refused_computer_act", agent: "computer_act", text: "click it", shows: []string{`"tool":"computer_act","output":`, `"outcome":"blocked"`}, replies: []string{
			`call:computer_act {"action":"front","frame_id":"frame-none","app":"firefox"}`, "text:Firefox is not mine to touch."}},
		{name: "refused_fetch_url", text: "fetch the local page", shows: []string{`"tool":"fetch_url"`, "refused by the crew's network wall"}, replies: []string{
			`call:fetch_url {"url":"http://127.0.0.1:1/admin"}`, "text:That address is not public."}},
		{name: "stopped", text: "write c", shows: []string{`"type":"run_stop_requested"`, `"status":"stopped"`}, replies: []string{`call:workspace_write {"path":"c.txt","content":"c\n"}`, "text:never"},
			drive: func(t *testing.T, s *server, id string) {
				waitConv(t, s.url, id, "the card", func(c convView) bool { return len(c.PendingApprovals) == 1 })
				if code, body := postStop(t, s.url+"/api/conversations/"+id+"/stop", map[string]any{}); code != 202 && code != 200 {
					t.Fatalf("stop = %d %v", code, body)
				}
				waitConv(t, s.url, id, "quiet after the stop", quiet)
			}},
		{name: "stopped_tool", text: "fetch the slow page", shows: []string{`"type":"run_stop_requested"`, `"tool":"fetch_url"`, `"status":"stopped"`},
			replies: []string{`call:fetch_url {"url":` + slow + `}`, "text:never"}, drive: stopWhileSlow},
		{name: "stopped_script", text: "script the slow page", shows: []string{`"type":"run_stop_requested"`, `"type":"nested_call"`, `"outcome":"stopped"`, `"status":"stopped"`},
			replies: []string{`call:tool_script {"script":` + strconv.Quote(`print(tools.call("fetch_url", url=`+slow+`)["output"])`+"\nprint(\"after the fetch\")") + `}`, "text:never"},
			drive:   stopWhileSlow},
		{name: "teammate", text: "run a team", shows: []string{`"tool":"spawn_teammate"`}, replies: []string{
			`call:propose_team {"plan":"alice lists the workspace","members":[{"name":"alice","agent":"master","responsibility":"list the workspace"}]}`,
			`call:create_task {"subject":"listing"}`,
			`call:spawn_teammate {"name":"alice","task_id":"{task}"}`,
			"text:The team is working.", "text:Alice reported back."},
			drive: func(t *testing.T, s *server, id string) {
				var tv teamView
				eventstest.Eventually(t, "the team's task completed, approving cards", func() bool {
					var c convView
					getJSON(t, s.url+"/api/conversations/"+id, &c)
					for _, p := range c.PendingApprovals {
						postJSON(t, s.url+"/api/approvals/"+p.ID, map[string]any{"decision": "approve"})
					}
					tv = teamView{}
					return getJSON(t, s.url+"/api/teams/"+id, &tv) == 200 && len(tv.Tasks) == 1 && tv.Tasks[0].Status == "completed"
				})
				finishedRuns(t, s.url, id, 2)
				waitConv(t, s.url, id, "the lead quiet", quiet)
				for _, m := range tv.Members {
					waitConv(t, s.url, m.Conversation, "the teammate quiet", quiet)
					teammateConv = m.Conversation
				}
			}},
	}
	model.replies["alice"] = []string{`call:workspace_list {"path":"."}`, `call:complete_task {"task_id":"{task}","result":"Listed the workspace."}`, "text:alice: done."}
	model.hold["steer"] = 1
	for _, r := range rows {
		model.replies[r.name], model.cost[r.name] = r.replies, r.cost
	}
	send := func(t *testing.T, s *server, r replayRow) string {
		// A channel per row: a conversation per row.
		body := map[string]any{"text": "⟦row:" + r.name + "⟧ " + r.text, "channel": "api:" + r.name}
		if r.agent != "" {
			body["agent"] = r.agent
		}
		if code, acc := postJSON(t, s.url+"/api/inbound", body); code != 202 {
			t.Fatalf("%s: inbound = %d %v", r.name, code, acc)
		} else {
			return acc["conversation_id"].(string)
		}
		return ""
	}

	// The crash: the first server kills itself once the row's tool call
	// is stored (the faults package's crash point); the second takes the run up.
	convs := map[string]string{}
	s := launchServe(t, home, append(env, faults.CrashAfterTypeEnv+"=tool_called")...)
	waitHealthy(t, s.url)
	convs["crash_resumed"] = send(t, s, rows[0])
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the crash point did not kill crew serve")
	}
	s = startServe(t, home, env...)
	waitConv(t, s.url, convs["crash_resumed"], "the crashed run finished after the restart", quiet)

	for _, r := range rows[1:] {
		if r.skip != "" {
			continue
		}
		id := send(t, s, r)
		convs[r.name] = id
		drive := r.drive
		if drive == nil {
			drive = driveApproving("approve")
		}
		drive(t, s, id)
	}
	runsOf := map[string][]runView{}
	for name, id := range convs {
		runsOf[name] = finishedRuns(t, s.url, id, 1)
	}
	if teammateConv != "" {
		runsOf["teammate_seat"] = finishedRuns(t, s.url, teammateConv, 1)
	}
	// With crew serve running, crew replay reads the run through the
	// server (GET /api/runs/{id}/recorded): the team's runs replay as they
	// do on the stopped home below, the teammate's board and lead included.
	t.Run("team_running_server", func(t *testing.T) {
		for _, name := range []string{"teammate", "teammate_seat"} {
			if len(runsOf[name]) == 0 {
				t.Fatalf("no finished run recorded for %s", name)
			}
			for _, run := range runsOf[name] {
				out, errOut, code := crewEnv(t, home, []string{"MY_AGENT_ROUTES=fake:echo"}, "replay", run.RunID)
				if code != 0 || !strings.Contains(out, "events identical") {
					t.Errorf("replay of %s run %s through the running server: code %d\n%s%s", name, run.RunID, code, out, errOut)
				}
			}
		}
	})
	s.stop(t)

	// Replays read neither the routes nor the files the recording had.
	replayEnv := []string{"MY_AGENT_ROUTES=fake:echo"}
	if teammateConv != "" {
		convs["teammate_seat"] = teammateConv
	}
	exports := map[string]string{}
	rows = append(rows, replayRow{name: "teammate_seat", shows: []string{`"member":"alice"`, `"tool":"complete_task"`}})
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			if r.skip != "" {
				t.Skip(r.skip)
			}
			runs := runsOf[r.name]
			if len(runs) == 0 {
				t.Fatalf("no finished run recorded for %s", r.name)
			}
			export := filepath.Join(t.TempDir(), "export.jsonl")
			if _, errOut, code := crew(t, home, "export", convs[r.name], "-o", export); code != 0 {
				t.Fatalf("export %s: %s", convs[r.name], errOut)
			}
			b, err := os.ReadFile(export)
			must(t, err)
			for _, want := range r.shows {
				if !strings.Contains(string(b), want) {
					t.Errorf("the recorded %s conversation holds no %s: the row does not record its feature", r.name, want)
				}
			}
			for _, run := range runs {
				out, errOut, code := crewEnv(t, home, replayEnv, "replay", run.RunID)
				if code != 0 || !strings.Contains(out, "events identical") {
					t.Errorf("replay of %s run %s (%s): code %d\n%s%s", r.name, run.RunID, run.Status, code, out, errOut)
				}
			}
			exports[r.name] = string(b)
		})
	}

	// A different compaction threshold: the run whose reads were first
	// micro-compacted diverges at that step.
	t.Run("changed_compaction_threshold", func(t *testing.T) {
		run, step := firstEvent(t, exports["compaction"], "context_compacted")
		p := filepath.Join(home, "config.yaml")
		b, err := os.ReadFile(p)
		must(t, err)
		must(t, os.WriteFile(p, []byte(strings.Replace(string(b), "context_window: 9000", "context_window: 12000", 1)), 0o600))
		defer os.WriteFile(p, b, 0o600)
		out, errOut, code := crewEnv(t, home, replayEnv, "replay", run)
		if code != 1 || !strings.Contains(errOut, fmt.Sprintf("(step %d)", step)) || !strings.Contains(out, "expected: context_compacted") {
			t.Errorf("replay with a larger window: want the compaction of step %d named, got code %d\n%s%s", step, code, out, errOut)
		}
	})
	// A changed guard limit: a build whose guard reminds at the second
	// repeat diverges at the step it reminds the model.
	t.Run("changed_guard_limit", func(t *testing.T) {
		run, step := firstEvent(t, exports["guard"], "guard_reminded")
		if err := <-built; err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), bin, "replay", run)
		cmd.Env = append(os.Environ(), "CREW_HOME="+home, replayEnv[0])
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		// The recording went on to step `step`'s model call; the changed
		// build reminds after step-1's calls.
		got := fmt.Sprintf(`got:      guard_reminded {"count":2,"run_id":%q,"step":%d,`, run, step-1)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(out.String(), got) ||
			!strings.Contains(errOut.String(), fmt.Sprintf("(step %d)", step)) {
			t.Errorf("replay on the changed guard: want its reminder after step %d named at step %d, got %v\n%s%s", step-1, step, err, out.String(), errOut.String())
		}
	})
}

// firstEvent is the run and step of the first event of type typ in an
// export.
func firstEvent(t *testing.T, export, typ string) (string, int) {
	t.Helper()
	for _, line := range strings.Split(export, "\n") {
		var l struct {
			Type string `json:"type"`
			Data struct {
				RunID string `json:"run_id"`
				Step  int    `json:"step"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Type == typ {
			return l.Data.RunID, l.Data.Step
		}
	}
	t.Fatalf("the export holds no %s", typ)
	return "", 0
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
