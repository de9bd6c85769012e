package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/tools/fence"
)

// The conformance test of the gate table (issue 26): every tool of
// docs/security.md's table — loop.GateTable over the registry, kept equal
// to the code by cmd/crew/app TestGateTableInSecurityDoc — is called in
// every seat through one real crew serve, and the call's fate in the log
// must be the table's cell.

// confRow is how the test calls one tool: args valid for a plain call (no
// ask_when or allow_when rule matches them), bad args that a deterministic
// check refuses before anyone is asked (only for tools that ask
// somewhere), and whether its result holds outside content, fenced.
type confRow struct {
	args, bad string
	fenced    bool
}

// confRows: a tool registered without a row here fails the test, as does
// a row for a tool the table does not have. $TASK is the seat's task id.
var confRows = map[string]confRow{
	"artifact_create":          {args: `{"title":"Conf","kind":"markdown","content":"one\n"}`, bad: `{"title":"Conf","kind":"exe","content":"x"}`},
	"artifact_edit":            {args: `{"artifact":"nope","old":"a","new":"b"}`},
	"artifact_export":          {args: `{"artifact":"nope","path":"export.md"}`, bad: `{"artifact":"nope","path":"../../env"}`},
	"artifact_import":          {args: `{"path":"notes.md"}`},
	"artifact_list":            {args: `{}`},
	"artifact_read":            {args: `{"artifact":"nope"}`},
	"artifact_rewrite":         {args: `{"artifact":"nope","content":"x"}`},
	"ask_user":                 {args: `{"question":"Which one?"}`},
	"browser_act":              {args: `{"ref":"e1","action":"click"}`, bad: `{"action":"click"}`},
	"browser_download":         {args: `{"ref":"e1"}`, bad: `{}`},
	"browser_navigate":         {args: `{"url":"$PAGE"}`, bad: `{"url":"http://127.0.0.1:1/"}`},
	"browser_pdf":              {args: `{}`},
	"browser_screenshot":       {args: `{}`},
	"browser_snapshot":         {args: `{}`, fenced: true},
	"browser_tabs":             {args: `{}`},
	"browser_text":             {args: `{}`, fenced: true},
	"cancel_cron":              {args: `{"id":"nope"}`},
	"claim_task":               {args: `{"task_id":"$TASK"}`},
	"compact":                  {args: `{}`},
	"complete_task":            {args: `{"task_id":"$TASK","result":"conformance done"}`},
	"computer_act":             {args: `{"action":"click","frame_id":"f1","x":1,"y":1}`},
	"computer_observe":         {args: `{}`},
	"computer_screenshot":      {args: `{}`},
	"computer_state":           {args: `{}`},
	"create_task":              {args: `{"subject":"extra"}`},
	"create_worktree":          {args: `{"name":"conf-tree","task_id":"$TASK"}`, bad: `{"name":"conf-tree"}`},
	"delegate":                 {args: `{"agent":"helper","task":"CONFSEAT=other say done"}`},
	"fetch_url":                {args: `{"url":"https://example.com/conf"}`, fenced: true},
	"get_task":                 {args: `{"task_id":"$TASK"}`},
	"image_read":               {args: `{"path":"pic.png"}`},
	"list_tasks":               {args: `{}`},
	"list_crons":               {args: `{}`},
	"list_teammates":           {args: `{}`},
	"mcp__notes__delete-all":   {args: `{"confirm":true}`, bad: `{}`},
	"mcp__notes__search":       {args: `{"q":"x"}`, fenced: true},
	"mcp__trusted__delete-all": {args: `{"confirm":true}`, bad: `{}`},
	"memory_save":              {args: `{"text":"conformance fact"}`},
	"memory_search":            {args: `{"query":"conformance"}`},
	"pdf_read":                 {args: `{"path":"doc.pdf"}`},
	"progress_note":            {args: `{"text":"working"}`},
	"propose_team":             {args: `{"members":[{"name":"x","agent":"helper","responsibility":"r"}],"plan":"p"}`, bad: `{"plan":"p"}`},
	"recall":                   {args: `{"query":"conformance"}`},
	"recall_open":              {args: `{"source":"nope"}`},
	"request_plan":             {args: `{"name":"extra"}`},
	"request_shutdown":         {args: `{"name":"extra"}`},
	"review_plan":              {args: `{"request_id":"nope","approve":true}`},
	"schedule_create":          {args: `{"name":"conf","cron":"0 7 * * *","prompt":"hi"}`, bad: `{"name":"conf","cron":"not a cron","prompt":"hi"}`},
	"send_message":             {args: `{"to":"lead","content":"hello from conformance"}`},
	"shell_run":                {args: `{"command":"touch conf-shell"}`, bad: `{}`},
	"skill_read":               {args: `{"name":"nope"}`},
	"spawn_teammate":           {args: `{"name":"extra","agent":"helper"}`},
	"submit_plan":              {args: `{"plan":"my plan"}`},
	"task_stop":                {args: `{"task_id":"bg-nope"}`},
	"todo_write":               {args: `{"items":[{"text":"a","done":false}]}`},
	"tool_output_read":         {args: `{"call_id":"nope"}`},
	"tool_script":              {args: `{"script":"print(1)"}`},
	"tool_search":              {args: `{"query":"notes"}`},
	"update_task":              {args: `{"task_id":"$TASK"}`},
	"user_memory_forget":       {args: `{"name":"conf"}`},
	"user_memory_save":         {args: `{"name":"conf","text":"likes tests"}`},
	"web_search":               {args: `{"query":"conformance"}`, fenced: true},
	"wiki_apply":               {args: `{"page":"conf","content":"x"}`},
	"wiki_get":                 {args: `{"page":"nope"}`},
	"wiki_search":              {args: `{"query":"conformance"}`},
	"workspace_edit":           {args: `{"path":"notes.md","old":"one","new":"two"}`, bad: `{"path":"../../env","old":"a","new":"b"}`},
	"workspace_glob":           {args: `{"pattern":"*.md"}`},
	"workspace_grep":           {args: `{"pattern":"one"}`},
	"workspace_list":           {args: `{}`},
	"workspace_read":           {args: `{"path":"big.txt"}`, fenced: false},
	"workspace_write":          {args: `{"path":"conf.txt","content":"x"}`, bad: `{"path":"../../env","content":"x"}`},
}

// confSeat is one column: its name in the table, the marker its first
// message carries, and whether its calls go through tool_script.
type confSeat struct{ name, key, script string }

var confSeats = []confSeat{
	{"supervised web", "web", ""}, {"Telegram", "telegram", ""}, {"API channel", "api", ""}, {"MCP client", "mcp", ""},
	{"autonomous job", "job", ""}, {"delegated child", "child", ""}, {"team lead", "lead", ""},
	{"teammate", "mate", ""}, {"script (read-only)", "read", "read"}, {"script (gated)", "gated", "gated"},
}

// gateTableOfDoc reads docs/security.md's table: tool → seat → cell.
func gateTableOfDoc(t *testing.T) map[string]map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- gate table:")
	body, _, ok2 := strings.Cut(rest, "<!-- end of gate table -->")
	if !ok || !ok2 {
		t.Fatal("docs/security.md has no gate table")
	}
	var head []string
	table := map[string]map[string]string{}
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if head == nil {
			head = cells
			continue
		}
		row := map[string]string{}
		for i, c := range cells[1:] {
			row[head[i+1]] = c
		}
		table[strings.Trim(cells[0], "`")] = row
	}
	return table
}

// base is a cell's decision for a plain call: "runs + ask_when" runs.
func base(cell string) string {
	d, _, _ := strings.Cut(cell, " + ")
	return d
}

// confModel plays every seat: the first user message's CONFSEAT=<key>
// (or a teammate's name in its system prompt) picks the seat's plan, and
// the call ids already in the request say how far it got.
type confModel struct {
	mu       sync.Mutex
	plans    map[string][]confCall
	declared map[string]map[string]bool // seat → tool names declared to it
	bodies   map[string][]string        // seat → raw requests
}

type confCall struct {
	name, args string
	bad        bool // a deterministic refusal expected before any question
}

var (
	confSeatRe  = regexp.MustCompile(`CONFSEAT=(\w+)`)
	confIDRe    = regexp.MustCompile(`cf-(\w+)-(\d+)`)
	confTaskRe  = regexp.MustCompile(`(task_[0-9a-f]+)`)
	confMateRe  = regexp.MustCompile(`You are (mate|extra),`)
	confCreated = regexp.MustCompile(`Created (task_[0-9a-f]+): CONFSEAT=mate`)
)

func (m *confModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	var body strings.Builder
	dec := json.NewDecoder(teeReader{r.Body, &body})
	if err := dec.Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	seat := ""
	if len(req.Messages) > 0 {
		if mm := confMateRe.FindStringSubmatch(fmt.Sprint(req.Messages[0].Content)); mm != nil {
			seat = mm[1]
		}
	}
	for _, msg := range req.Messages {
		if seat != "" {
			break
		}
		if msg.Role == "user" {
			if mm := confSeatRe.FindStringSubmatch(fmt.Sprint(msg.Content)); mm != nil {
				seat = mm[1]
			}
			break
		}
	}
	all := body.String()
	m.mu.Lock()
	if m.declared[seat] == nil {
		m.declared[seat] = map[string]bool{}
	}
	for _, tl := range req.Tools {
		m.declared[seat][tl.Function.Name] = true
	}
	m.bodies[seat] = append(m.bodies[seat], all)
	plan := m.plans[seat]
	m.mu.Unlock()
	next := 0
	for _, mm := range confIDRe.FindAllStringSubmatch(all, -1) {
		if mm[1] == seat {
			n, _ := strconv.Atoi(mm[2])
			next = max(next, n+1)
		}
	}
	task := ""
	if mm := confCreated.FindStringSubmatch(all); mm != nil {
		task = mm[1]
	} else if seat == "mate" {
		task = confTaskRe.FindString(all)
	}
	type tc struct{ id, name, args string }
	var calls []tc
	for i := next; i < len(plan) && len(calls) < 8; i++ {
		c := plan[i]
		calls = append(calls, tc{fmt.Sprintf("cf-%s-%d", seat, i), c.name, strings.ReplaceAll(c.args, "$TASK", task)})
		if c.name == "ask_user" || seat == "lead" && i < 3 {
			break // what follows needs its answer: the question's, or the team's set-up
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	if len(calls) == 0 {
		chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": "done: " + seat}, "finish_reason": "stop"}}})
	} else {
		var tcs []any
		for i, c := range calls {
			tcs = append(tcs, map[string]any{"index": i, "id": c.id, "type": "function",
				"function": map[string]any{"name": c.name, "arguments": c.args}})
		}
		chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "delta": map[string]any{"tool_calls": tcs}}}})
	}
	chunk(map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 12, "completion_tokens": 3, "cost": 0.00001}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

type teeReader struct {
	r interface{ Read([]byte) (int, error) }
	b *strings.Builder
}

func (t teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.b.Write(p[:n])
	return n, err
}

// notesMCP is an in-process MCP server on loopback with the table's MCP
// kinds: search (listed read-only) and delete-all; the trusted server's
// delete-all is the same tool of a server set autonomous: run.
func notesMCP(t *testing.T) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "notes", Version: "1"}, nil)
	obj := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "additionalProperties": false}
	srv.AddTool(&sdk.Tool{Name: "search", Description: "searches notes", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "note one"}}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "delete-all", Description: "deletes every note", InputSchema: map[string]any{"type": "object", "required": []any{"confirm"},
		"properties": map[string]any{"confirm": map[string]any{"type": "boolean"}}}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "deleted everything"}}}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	return ts.URL
}

// confEvent is one line of a conversation's export.
type confEvent struct {
	Type string `json:"type"`
	Data struct {
		CallID  string `json:"call_id"`
		Tool    string `json:"tool"`
		Outcome string `json:"outcome"`
		Output  string `json:"output"`
		IsError bool   `json:"is_error"`
		Reason  string `json:"reason"`
		RunID   string `json:"run_id"`
	} `json:"data"`
}

func exportOf(t *testing.T, url, conv string) []confEvent {
	t.Helper()
	resp, err := http.Get(url + "/api/conversations/" + conv + "/export")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var evs []confEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e confEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type != "" {
			evs = append(evs, e)
		}
	}
	return evs
}

// TestEveryToolInEverySeatThroughServe is the conformance test (issue 26
// item 2): for every tool of the gate table and every seat, a scripted
// model calls the tool through a real crew serve, and the log must show the
// table's decision — runs (tool_called, or an instant tool's result),
// asks (an approval, denied here), asks a question (answered), refused (a
// harness result, no approval) or not offered (not declared, and answered
// "unknown tool"); a call with bad arguments of a tool that asks is refused
// before any question; a result that reads outside content is fenced;
// every stored result is capped; every call is on the runs page; and every
// run replays identical with crew replay.
func TestEveryToolInEverySeatThroughServe(t *testing.T) {
	table := gateTableOfDoc(t)
	for name := range table {
		if _, ok := confRows[name]; !ok {
			t.Errorf("%s is in the gate table but has no conformance row (confRows)", name)
		}
	}
	for name := range confRows {
		if _, ok := table[name]; !ok {
			t.Errorf("conformance row %s names no tool of the gate table", name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	names := make([]string, 0, len(table))
	for name := range table {
		names = append(names, name)
	}
	slices.Sort(names)

	home := initHome(t)
	// e1 is the button: clicking it goes nowhere, so browser_download
	// (after browser_act) still finds it in the outline.
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><head><title>Conf</title></head><body><button>Continue</button> <a href="/next">Next page</a></body></html>`)
	}))
	defer page.Close()
	pageURL := page.URL + "/conf"
	notes := notesMCP(t)
	f, err := os.OpenFile(filepath.Join(home, "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	fmt.Fprintf(f, "\nbrowser_enabled: true\nmcp_servers:\n  notes:\n    url: %s\n    read_only_tools: [search]\n  trusted:\n    url: %s\n    autonomous: run\n", notes, notes)
	f.Close()
	var tl []string
	for _, name := range names {
		if !strings.HasPrefix(name, "mcp__") && !strings.HasPrefix(name, "computer_") && !strings.HasPrefix(name, "browser_") {
			tl = append(tl, name)
		}
	}
	// Every agent holds every tool; the master leads teams (the team lead
	// seat and the teammate's lead), plain leads none (the owner's, the
	// job's and the delegating seats), helper is delegated to and spawned.
	mcpLine := "mcp: [notes, trusted]\n"
	agentYAML := func(extra string) string {
		return "name: Conf\ndescription: conformance\ntools: [" + strings.Join(tl, ", ") + "]\n" + mcpLine + "max_steps: 60\n" +
			"browser: act\ncomputer: \"on\"\ncomputer_apps: [gedit]\nvision_routes: [openrouter:vendor/model]\n" + extra
	}
	must(t, os.WriteFile(filepath.Join(home, "agent.yaml"), []byte(agentYAML("")), 0o600))
	// An agent leads a team when it holds spawn_teammate (loop/team.Leads):
	// the others hold every tool but that one.
	tl = slices.DeleteFunc(tl, func(n string) bool { return n == "spawn_teammate" })
	putAgent(t, home, "plain", agentYAML("team: none\ndelegates: [helper]\nschedules:\n  - name: conf\n    cron: \"0 7 * * *\"\n    prompt: \"CONFSEAT=job\"\n"), "PLAIN")
	putAgent(t, home, "helper", agentYAML("team: none\n"), "HELPER")
	putAgent(t, home, "reader", agentYAML("team: none\n"), "READER")
	putAgent(t, home, "gater", agentYAML("team: none\nscript_calls: gated\n"), "GATER")
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
	for _, ws := range []string{filepath.Join(home, "workspace"), filepath.Join(home, "agents", "plain", "workspace"), filepath.Join(home, "agents", "helper", "workspace"),
		filepath.Join(home, "agents", "reader", "workspace"), filepath.Join(home, "agents", "gater", "workspace")} {
		must(t, os.MkdirAll(ws, 0o700))
		must(t, os.WriteFile(filepath.Join(ws, "notes.md"), []byte("one\n"), 0o600))
		must(t, os.WriteFile(filepath.Join(ws, "pic.png"), png, 0o600))
		must(t, os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("0123456789abcdef\n", 40000)), 0o600)) // 680 KB
	}

	// The plans: in a direct seat the browser opens the test page (its
	// outline gives browser_act a ref) and tool_search loads the MCP
	// tools, then every row, the bad calls, and complete_task, compact and
	// ask_user last (they end what the seat can do); a script seat calls
	// each tool from its own tool_script.
	model := &confModel{plans: map[string][]confCall{}, declared: map[string]map[string]bool{}, bodies: map[string][]string{}}
	first := []string{"browser_navigate", "browser_snapshot"}
	for _, seat := range confSeats {
		var plan []confCall
		if seat.key == "lead" {
			plan = append(plan,
				confCall{name: "propose_team", args: `{"members":[{"name":"mate","agent":"helper","responsibility":"conformance"}],"plan":"conformance"}`},
				confCall{name: "create_task", args: `{"subject":"CONFSEAT=mate"}`},
				confCall{name: "spawn_teammate", args: `{"name":"mate","agent":"helper","task_id":"$TASK"}`})
		}
		if seat.script == "" {
			plan = append(plan, confCall{name: "tool_search", args: `{"names":["mcp__notes__search","mcp__notes__delete-all","mcp__trusted__delete-all"]}`})
		}
		ordered := append(slices.Clone(first), slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(first, n) })...)
		var last []confCall
		for _, name := range ordered {
			row := confRows[name]
			args := strings.ReplaceAll(row.args, "$PAGE", pageURL)
			c := confCall{name: name, args: args}
			if seat.script != "" {
				code := fmt.Sprintf("print(json.encode(tools.call(%q, json.decode(%q))))", name, args)
				a, _ := json.Marshal(map[string]string{"script": code})
				c = confCall{name: "tool_script", args: string(a)}
			}
			if name == "ask_user" || name == "complete_task" || name == "compact" {
				last = append(last, c)
			} else {
				plan = append(plan, c)
			}
		}
		if seat.script == "" {
			for _, name := range names {
				if bad := confRows[name].bad; bad != "" && base(table[name][seat.name]) == "asks" {
					plan = append(plan, confCall{name: name, args: bad, bad: true})
				}
			}
		}
		slices.SortStableFunc(last, func(a, b confCall) int { return strings.Compare(confScriptToolOr(b), confScriptToolOr(a)) }) // complete_task, compact, ask_user
		model.plans[seat.key] = append(plan, last...)
	}
	model.plans["parent"] = []confCall{{name: "delegate", args: `{"agent":"helper","task":"CONFSEAT=child"}`}}

	api := httptest.NewServer(model)
	defer api.Close()
	route := []string{"MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL=" + api.URL + "/v1"}
	s := startServe(t, home, append(route, "CREW_TEST_ALLOW_ADDRS="+strings.TrimPrefix(page.URL, "http://"))...)

	// Open every seat's conversation.
	convs := map[string]string{}
	open := func(key, channel, agent string) {
		body := map[string]any{"text": "CONFSEAT=" + key, "channel": channel, "agent": agent}
		code, acc := postJSON(t, s.url+"/api/inbound", body)
		if code != 202 {
			t.Fatalf("inbound %s = %d %v", key, code, acc)
		}
		convs[key] = acc["conversation_id"].(string)
	}
	open("web", "web", "plain")
	open("telegram", "telegram:4242", "plain")
	open("api", "api", "plain")
	open("mcp", "mcp", "plain") // the channel crew_send stores on (gateways/mcpserver)
	open("lead", "web", "master")
	open("parent", "parent", "plain")
	open("read", "web", "reader")
	open("gated", "web", "gater")
	convs["job"] = runJob(t, s.url, "plain-conf")

	// Drive them: deny every approval (approve the team proposal), answer
	// every question, until every conversation has settled.
	type pending struct {
		Status           string `json:"status"`
		PendingApprovals []struct {
			ID, Tool string
		} `json:"pending_approvals"`
		PendingQuestion *struct {
			ID string `json:"id"`
		} `json:"pending_question"`
	}
	eventstest.EventuallyWithin(t, 8*time.Minute, "every seat to settle", func() bool {
		// The child and the teammate appear as they are opened.
		var list []struct {
			ID     string `json:"id"`
			Agent  string `json:"agent"`
			Parent string `json:"parent"`
		}
		getJSON(t, s.url+"/api/conversations", &list)
		all := map[string]bool{}
		for _, c := range list {
			all[c.ID] = true
		}
		busy := false
		for id := range all {
			var p pending
			getJSON(t, s.url+"/api/conversations/"+id, &p)
			for _, a := range p.PendingApprovals {
				decision := "deny"
				if a.Tool == "browser_navigate" {
					decision = "approve" // the test page: browser_act needs its outline
				}
				model.mu.Lock() // the model's handler appends to bodies meanwhile
				confirmed := strings.Contains(strings.Join(model.bodies["lead"], ""), "The owner confirmed")
				model.mu.Unlock()
				if a.Tool == "propose_team" && id == convs["lead"] && !confirmed {
					decision = "approve"
				}
				postJSON(t, s.url+"/api/approvals/"+a.ID, map[string]any{"decision": decision})
				busy = true
			}
			if p.PendingQuestion != nil {
				postJSON(t, s.url+"/api/questions/"+p.PendingQuestion.ID, map[string]any{"answer": "the first"})
				busy = true
			}
			if p.Status != "idle" {
				busy = true
			}
		}
		if !busy && len(all) >= len(convs) {
			var c convView
			done := true
			for _, id := range convs {
				getJSON(t, s.url+"/api/conversations/"+id, &c)
				done = done && settled(c)
			}
			if done {
				return true
			}
		}
		return false
	})
	// The child and the teammate, found where the crew says they are.
	var list []struct {
		ID     string `json:"id"`
		Agent  string `json:"agent"`
		RootID string `json:"root_id"`
	}
	getJSON(t, s.url+"/api/conversations", &list)
	for _, c := range list {
		if c.RootID == convs["parent"] && c.Agent == "helper" {
			model.mu.Lock()
			b := strings.Join(model.bodies["child"], "")
			model.mu.Unlock()
			if b != "" {
				convs["child"] = c.ID
			}
		}
	}
	var team teamView
	getJSON(t, s.url+"/api/teams/"+convs["lead"], &team)
	for _, m := range team.Members {
		if m.Name == "mate" {
			convs["mate"] = m.Conversation
		}
	}

	capped := 256 << 10
	var runIDs []string
	for _, seat := range confSeats {
		conv := convs[seat.key]
		if conv == "" {
			t.Errorf("%s: no conversation of the seat was found", seat.name)
			continue
		}
		evs := exportOf(t, s.url, conv)
		approval := map[string]string{}
		question, called := map[string]bool{}, map[string]bool{}
		completed := map[string]confEvent{}
		nested := map[string][]string{}
		runs := map[string]bool{}
		for _, e := range evs {
			id := e.Data.CallID
			switch e.Type {
			case "approval_requested":
				approval[id] = "asks"
				if e.Data.Reason != "" {
					approval[id] = "asks: " + e.Data.Reason
				}
			case "question_asked":
				question[id] = true
			case "tool_called":
				called[id] = true
			case "nested_call":
				nested[id] = append(nested[id], e.Data.Tool)
			case "tool_completed":
				completed[id] = e
				if len(e.Data.Output) > capped {
					t.Errorf("%s: %s's stored result is %d bytes, over the 256 KiB cap", seat.name, e.Data.Tool, len(e.Data.Output))
				}
			}
			if e.Data.RunID != "" && !runs[e.Data.RunID] {
				runs[e.Data.RunID] = true
				runIDs = append(runIDs, e.Data.RunID)
			}
		}
		page := getText(t, s.url+"/c/"+conv+"/runs")
		for i, c := range model.plans[seat.key] {
			id := fmt.Sprintf("cf-%s-%d", seat.key, i)
			done, ok := completed[id]
			got := "not reached"
			switch {
			case seat.script != "" && c.name == "tool_script" && ok:
				tool := confScriptTool(c.args)
				c.name = tool
				switch out := done.Data.Output; {
				case slices.Contains(nested[id], tool):
					got = "runs"
				case strings.Contains(out, "unknown tool"):
					got = "not offered"
				case strings.Contains(out, "needs the owner's approval and a script never waits"):
					got = "asks: stops the script" // an ask reason: the call would ask
				case strings.Contains(out, "cannot be called from a script") || strings.Contains(out, "STOP:"):
					got = "refused"
				default:
					got = "unexplained: " + oneLine(out)
				}
			case approval[id] != "":
				got = approval[id]
			case question[id]:
				got = "asks (a question)"
			case called[id] || ok && done.Data.Outcome == "":
				got = "runs"
			case ok && done.Data.Outcome == "blocked" && !model.declared[seat.key][c.name]:
				// Never declared to the seat, and answered by the harness
				// (unknown, or why the seat cannot have it).
				got = "not offered"
			case ok && done.Data.Outcome == "blocked":
				got = "refused"
			case ok:
				got = done.Data.Outcome
			}
			if c.bad {
				if got != "refused" && !strings.HasPrefix(got, "refused") {
					t.Errorf("%s: %s with bad arguments %s: %s, want refused before any question", seat.name, c.name, c.args, got)
				}
				continue
			}
			if _, ok := confRows[c.name]; !ok {
				continue // the seat's set-up calls
			}
			cell := table[c.name][seat.name]
			want := base(cell)
			switch {
			case strings.HasPrefix(got, "asks: ") && (want == "asks" || strings.HasSuffix(cell, "+ ask_when")):
				got = want // an ask reason of the call's own (ask_when) asks where the seat would run it
			case got == "asks: stops the script" && seat.script == "gated" && !strings.HasSuffix(cell, "+ ask_when"):
				got = "refused"
			}
			if got != want {
				t.Errorf("%s: %s %s, the gate table says %s (%s)", seat.name, c.name, got, want, oneLine(done.Data.Output))
			}
			if got == "runs" && seat.script == "" && confRows[c.name].fenced && !done.Data.IsError && !strings.Contains(done.Data.Output, fence.Marker) {
				t.Errorf("%s: %s read outside content but its result is not fenced: %s", seat.name, c.name, oneLine(done.Data.Output))
			}
			if ok && !strings.Contains(page, `data-call-id="`+id+`"`) {
				t.Errorf("%s: call %s (%s) is not on the runs page", seat.name, id, c.name)
			}
		}
	}
	s.stop(t)
	for _, run := range runIDs {
		// Replayed as recorded: each call's Check (the wall's allowed test
		// address, a page's outline) is answered as it was, with no
		// allowance of the live run's.
		out, errOut, code := crewEnv(t, home, route, "replay", run)
		if code == 0 && strings.Contains(out, "events identical") {
			continue
		}
		if confOnlyEstimateDiffers(out) {
			// A script seat's tool_script is described with every tool its
			// scripts may call, its MCP servers' offered tools included; a
			// replay knows only the MCP tools a search declared (a replay
			// limit, docs/loop.md), so its declarations, and nothing else
			// of any event, are a few dozen tokens shorter.
			t.Logf("replay of %s: only estimated_input_tokens differs at its first model call", run)
			continue
		}
		t.Errorf("replay of %s: code %d\n%s%s", run, code, out, errOut)
	}
}

// confOnlyEstimateDiffers: crew replay's report diverges at a model call
// whose expected and got events differ in estimated_input_tokens alone.
func confOnlyEstimateDiffers(out string) bool {
	var want, got map[string]any
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "expected: model_called "); ok {
			json.Unmarshal([]byte(rest), &want)
		}
		if rest, ok := strings.CutPrefix(line, "got:      model_called "); ok {
			json.Unmarshal([]byte(rest), &got)
		}
	}
	if want == nil || got == nil || want["estimated_input_tokens"] == got["estimated_input_tokens"] {
		return false
	}
	delete(want, "estimated_input_tokens")
	delete(got, "estimated_input_tokens")
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	return string(a) == string(b)
}

// confScriptToolOr is the tool a call reaches: its own, or its script's.
func confScriptToolOr(c confCall) string {
	if c.name == "tool_script" {
		if n := confScriptTool(c.args); n != "" {
			return n
		}
	}
	return c.name
}

// confScriptTool is the tool a script seat's tool_script calls.
func confScriptTool(args string) string {
	var a struct{ Script string }
	json.Unmarshal([]byte(args), &a)
	_, rest, _ := strings.Cut(a.Script, `tools.call("`)
	name, _, _ := strings.Cut(rest, `"`)
	return name
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
