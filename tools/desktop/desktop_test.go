package desktop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
	"github.com/my-agent-crew/crew/tools"
)

var apps = []string{"gtk3-widget-factory", "gedit"}

func envOf(conv string) tools.Env {
	return tools.Env{Conversation: conv, Agent: tools.AgentPolicy{ComputerApps: apps}}
}

// withView gives conversation conv a latest frame f1 with
// gtk3-widget-factory in front and an outline.
func withView(a *tools.Func[actArgs], conv string) {
	a.Tool().(Act).s.frame(conv, wire.Answer{FrameID: "f1",
		State: &wire.State{Frontmost: &wire.App{Class: "Gtk3-widget-factory", Exe: "gtk3-widget-factory"}},
		Refs: []wire.Element{
			{Ref: "e1", Role: "check box", Name: "checkbutton"},
			{Ref: "e2", Role: "text", Name: ""},
			{Ref: "e3", Role: "password text", Name: "Password"},
			{Ref: "e4", Role: "push button", Name: "Gửi"},
			{Ref: "e5", Role: "push button", Name: "Delete all"},
			{Ref: "e6", Role: "push button", Name: norm.NFD.String("Xoá")},
		}}, true)
}

// newAct is computer_act as the registry holds it.
func newAct() *tools.Func[actArgs] { return Tools()[3].(*tools.Func[actArgs]) }

// TestComputerActRefusedBeforeAsking (R-GATE-4, R-DSK): calls certain to be
// refused are refused by Check — so before the gate — and AllowWhen lets
// exactly those through, so the refusal reaches the turn without asking.
func TestComputerActRefusedBeforeAsking(t *testing.T) {
	a := newAct()
	withView(a, "c1")
	other := newAct()
	other.Tool().(Act).s.frame("c2", wire.Answer{FrameID: "f9", State: &wire.State{Frontmost: &wire.App{Class: "XTerm", Exe: "xterm"}}}, false)
	for _, c := range []struct {
		name, conv, args, want string
		apps                   []string
		act                    *tools.Func[actArgs]
	}{
		{"app outside computer_apps", "c1", `{"action":"front","frame_id":"f1","app":"xterm"}`, "not in this agent's computer_apps", nil, a},
		{"no apps at all", "c1", `{"action":"click","frame_id":"f1","ref":"e1"}`, "computer_apps is empty", []string{}, a},
		{"front app not allowed", "c2", `{"action":"click","frame_id":"f9","x":5,"y":5}`, "XTerm, which is not in", nil, other},
		{"sudo", "c1", `{"action":"type","frame_id":"f1","ref":"e2","text":"sudo rm -rf /"}`, `"sudo"`, nil, a},
		{"pkexec in a line", "c1", `{"action":"type","frame_id":"f1","text":"ls; pkexec bash"}`, `"pkexec"`, nil, a},
		{"su -", "c1", `{"action":"type","frame_id":"f1","text":"su -"}`, `"su"`, nil, a},
		{"quit", "c1", `{"action":"key","frame_id":"f1","keys":"Ctrl+Q"}`, "quits the app", nil, a},
		{"quit, modifiers in another order", "c1", `{"action":"key","frame_id":"f1","keys":"shift+control+q"}`, "quits the app", nil, a},
		{"alt+F4", "c1", `{"action":"key","frame_id":"f1","keys":"alt+F4"}`, "closes", nil, a},
		{"empty the trash", "c1", `{"action":"key","frame_id":"f1","keys":"ctrl+shift+Delete"}`, "empties the trash", nil, a},
		{"past the trash", "c1", `{"action":"key","frame_id":"f1","keys":"shift+del"}`, "past the trash", nil, a},
		{"text for a secure field", "c1", `{"action":"type","frame_id":"f1","ref":"e3","text":"hunter2"}`, "secure (password) field", nil, a},
		{"click on a secure field", "c1", `{"action":"click","frame_id":"f1","ref":"e3"}`, "secure (password) field", nil, a},
		{"stale frame", "c1", `{"action":"click","frame_id":"f0","ref":"e1"}`, "not your latest frame", nil, a},
		{"no frame", "c1", `{"action":"click","ref":"e1"}`, "frame_id is missing", nil, a},
		{"ref not shown", "c1", `{"action":"click","frame_id":"f1","ref":"e77"}`, "not in your latest outline", nil, a},
		{"ref of an outline another conversation saw", "c2", `{"action":"click","frame_id":"f9","ref":"e1"}`, "not in your latest outline", []string{"xterm"}, other},
		{"unknown field", "c1", `{"action":"click","frame_id":"f1","ref":"e1","force":true}`, "unknown field", nil, a},
		{"unknown action", "c1", `{"action":"drag","frame_id":"f1"}`, "unknown action", nil, a},
		{"click without a target", "c1", `{"action":"click","frame_id":"f1","x":3}`, "needs a ref or both x and y", nil, a},
	} {
		env := envOf(c.conv)
		if c.apps != nil {
			env.Agent.ComputerApps = c.apps
		}
		err := c.act.Check(env, json.RawMessage(c.args))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Check = %v, want %q", c.name, err, c.want)
		}
		// Arguments that do not decode are refused by Check and never
		// reach the gate, so AllowWhen is not asked of them (tools.Func).
		if c.want != "unknown field" && !c.act.AllowWhen(env, json.RawMessage(c.args)) {
			t.Errorf("%s: AllowWhen false for a call certain to be refused", c.name)
		}
	}
	for _, ok := range []string{
		`{"action":"click","frame_id":"f1","ref":"e1"}`,
		`{"action":"type","frame_id":"f1","ref":"e2","text":"su hào và su su"}`,
		`{"action":"type","frame_id":"f1","text":"pseudo code"}`,
		`{"action":"key","frame_id":"f1","keys":"ctrl+a"}`,
		`{"action":"front","frame_id":"f1","app":"Gedit"}`,
	} {
		if err := a.Check(envOf("c1"), json.RawMessage(ok)); err != nil {
			t.Errorf("Check(%s) = %v, want nil", ok, err)
		}
		if a.AllowWhen(envOf("c1"), json.RawMessage(ok)) {
			t.Errorf("AllowWhen(%s) true: only refused calls are routine", ok)
		}
	}
}

// TestComputerActAsksEvenWhenAutonomous (R-GATE-4): the kinds the seed
// names always carry an ask reason; plain edits on shown elements do not.
func TestComputerActAsksEvenWhenAutonomous(t *testing.T) {
	a := newAct()
	withView(a, "c1")
	for args, want := range map[string]string{
		`{"action":"front","frame_id":"f1","app":"gedit"}`:                       "brings gedit to the front",
		`{"action":"click","frame_id":"f1","x":10,"y":20}`:                       "clicks by coordinates (10,20)",
		`{"action":"scroll","frame_id":"f1","x":10,"y":20,"dy":3}`:               "scrolls at coordinates",
		`{"action":"key","frame_id":"f1","keys":"Return"}`:                       "lone Return",
		`{"action":"key","frame_id":"f1","keys":"space"}`:                        "lone space",
		`{"action":"key","frame_id":"f1","keys":"F5"}`:                           "not one of the common editing keys",
		`{"action":"key","frame_id":"f1","keys":"ctrl+alt+t"}`:                   "not one of the common editing keys",
		`{"action":"type","frame_id":"f1","ref":"e2","text":"please SEND it"}`:   `"send"`,
		`{"action":"type","frame_id":"f1","ref":"e2","text":"Thanh toán ngay"}`:  `"thanh toán"`,
		`{"action":"type","frame_id":"f1","ref":"e2","text":"line one\nline 2"}`: "line break",
		`{"action":"click","frame_id":"f1","ref":"e4"}`:                          `"gửi"`,
		`{"action":"click","frame_id":"f1","ref":"e5"}`:                          `"delete"`,
		`{"action":"click","frame_id":"f1","ref":"e6"}`:                          `"xoá"`,
	} {
		got := tools.AskReason(a, envOf("c1"), json.RawMessage(args))
		if !strings.Contains(got, want) {
			t.Errorf("AskReason(%s) = %q, want %q", args, got, want)
		}
	}
	// An element the server has not seen (a restart forgot the outline)
	// asks: its name cannot be checked.
	if got := tools.AskReason(a, envOf("c-new"), json.RawMessage(`{"action":"click","frame_id":"f1","ref":"e1"}`)); !strings.Contains(got, "has not seen") {
		t.Errorf("unseen ref: %q", got)
	}
	for _, args := range []string{
		`{"action":"click","frame_id":"f1","ref":"e1"}`,
		`{"action":"type","frame_id":"f1","ref":"e2","text":"display the payroll"}`,
		`{"action":"key","frame_id":"f1","keys":"ctrl+a"}`,
		`{"action":"key","frame_id":"f1","keys":"shift+Tab"}`,
		`{"action":"key","frame_id":"f1","keys":"x"}`,
	} {
		if got := tools.AskReason(a, envOf("c1"), json.RawMessage(args)); got != "" {
			t.Errorf("AskReason(%s) = %q, want none", args, got)
		}
	}
	if !tools.NeedsApproval(a) {
		t.Error("computer_act needs approval in a supervised conversation")
	}
	for _, t2 := range Tools()[:3] {
		if tools.NeedsApproval(t2) {
			t.Errorf("%s needs no approval", t2.Def().Name)
		}
	}
}

// TestComputerToolsSayTheHelperIsNotRunning (R-DSK): without a helper the
// four tools answer that it is not running and how to start it.
func TestComputerToolsSayTheHelperIsNotRunning(t *testing.T) {
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, "desktop"), 0o700); err != nil {
		t.Fatal(err)
	}
	env := envOf("c1")
	env.HomeDir = home
	args := map[string]string{ActTool: `{"action":"click","frame_id":"f1","ref":"e1"}`}
	for _, tool := range Tools() {
		res, err := tool.Run(t.Context(), env, json.RawMessage(args[tool.Def().Name]))
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(res.Output, "not running") || !strings.Contains(res.Output, "crew-desktop --home") {
			t.Errorf("%s: %+v", tool.Def().Name, res)
		}
	}
}

// TestComputerToolsRefuseAnUnsafeSocketFolder (R-DSK): a desktop/ folder
// the group can write is refused before any connection.
func TestComputerToolsRefuseAnUnsafeSocketFolder(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "desktop")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o775)
	env := envOf("c1")
	env.HomeDir = home
	res, err := State{}.Run(t.Context(), env, noArgs{})
	if err != nil || !res.IsError || !strings.Contains(res.Output, "not safe") {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestCanonKeys(t *testing.T) {
	for in, want := range map[string]string{"Shift+Ctrl+Q": "ctrl+shift+q", "control+Return": "ctrl+enter", "Esc": "escape", "super+shift+Del": "shift+super+delete"} {
		if got := canonKeys(in); got != want {
			t.Errorf("canonKeys(%q) = %q, want %q", in, got, want)
		}
	}
}
