// Package desktop holds the computer_* tools (R-DSK): computer_state,
// computer_screenshot, computer_observe and computer_act, for agents whose
// agent.yaml says computer: "on". The server never touches the display:
// each call is one request to the desktop helper (crew-desktop, package
// desktop-helper) over <home>/desktop/sock, and only to a socket owned by
// the server's uid in a folder nobody else can write (wire.Call).
//
// Without a helper the tools are there and say it is not running and how
// to start it. What the helper shows — window titles, element names, the
// outline — comes from other programs, so it reaches the model fenced
// (tools/fence); screenshots are image parts.
//
// computer_act is gated (rules.go): refused before anyone is asked when it
// is certain to be refused, asked even in autonomous conversations for
// the risky kinds, and re-checked by the helper right before it acts.
package desktop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
	"github.com/my-agent-crew/crew/tools"
)

// Names of the four tools: an agent with computer: "on" gets all of them.
const (
	StateTool      = "computer_state"
	ScreenshotTool = "computer_screenshot"
	ObserveTool    = "computer_observe"
	ActTool        = "computer_act"
)

// Names lists the four tools.
var Names = []string{ActTool, ObserveTool, ScreenshotTool, StateTool}

// Grant is what agent.yaml's computer: "on" gives an agent (on): the four
// tools, which come by that key only (cmd/crew/home refuses them under
// tools:).
func Grant(on bool) tools.Grant {
	if !on {
		return tools.Grant{}
	}
	return tools.Grant{Names: Names}
}

// callTimeout bounds one request (an outline of a big app takes seconds).
const callTimeout = 60 * time.Second

// Tools returns the four tools, sharing what each conversation last saw.
func Tools() []tools.Tool {
	s := &seen{byConv: map[string]*view{}}
	return []tools.Tool{tools.NewFunc[noArgs](State{s}), tools.NewFunc[screenshotArgs](Screenshot{s}),
		tools.NewFunc[noArgs](Observe{s}), tools.NewFunc[actArgs](Act{s})}
}

// NotRunning is what every tool answers when no helper listens.
const NotRunning = "The desktop helper is not running, so the desktop cannot be seen or used. " +
	"The owner starts it in their graphical session: crew-desktop --home <the crew home> " +
	"(or the crew-desktop user service, see docs/deployment.md)."

// call sends one request to the helper of env's home. A failure to reach
// it is the model's result (the helper is not running, or its socket is
// unsafe), never a harness error.
func call(ctx context.Context, env tools.Env, req wire.Request) (wire.Answer, *tools.Result) {
	if env.HomeDir == "" {
		res := tools.Failf("the desktop tools need the crew's home; this run has none")
		return wire.Answer{}, &res
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	ans, err := wire.Call(ctx, wire.SocketPath(env.HomeDir), req)
	switch {
	case errors.Is(err, wire.ErrNotRunning):
		res := tools.Failf("%s", NotRunning)
		return ans, &res
	case errors.Is(err, wire.ErrUnsafe):
		res := tools.Failf("The desktop helper's socket is not safe to use, so the server does not speak to it: %v", err)
		return ans, &res
	case err != nil:
		res := tools.Failf("The desktop helper did not answer: %v", err)
		return ans, &res
	case ans.Error != "":
		res := tools.Failf("The desktop helper refused (%s): %s", ans.Code, ans.Error)
		return ans, &res
	}
	return ans, nil
}

// seen is what each conversation last saw of the desktop: the latest frame
// and the elements of the latest outline, so computer_act's gate can tell
// before asking what a call would touch. It is a hint for the gate; the
// helper checks everything again right before it acts.
type seen struct {
	mu     sync.Mutex
	byConv map[string]*view
	order  []string // oldest first, to forget beyond maxConvs
}

const maxConvs = 256

type view struct {
	frame string
	front *wire.App
	refs  map[string]wire.Element // nil: no outline since the frame
}

func (s *seen) get(conv string) (view, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.byConv[conv]
	if !ok {
		return view{}, false
	}
	return *v, true
}

// frame records a new frame; refs is the outline made with it (nil for a
// screenshot, which keeps the outline the helper still holds).
func (s *seen) frame(conv string, ans wire.Answer, outline bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.byConv[conv]
	if !ok {
		if len(s.order) >= maxConvs {
			delete(s.byConv, s.order[0])
			s.order = s.order[1:]
		}
		v = &view{}
		s.byConv[conv] = v
		s.order = append(s.order, conv)
	}
	v.frame = ans.FrameID
	if ans.State != nil {
		v.front = ans.State.Frontmost
	}
	if outline {
		v.refs = map[string]wire.Element{}
		for _, e := range ans.Refs {
			v.refs[e.Ref] = e
		}
	}
}

// describeState is the state in words. What other programs named (the
// window's title, its class) is fenced by the caller.
func describeState(st *wire.State) string {
	if st == nil {
		return "no state"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "screen %dx%d on display %s\n", st.Width, st.Height, st.Display)
	if st.Frontmost != nil {
		f := st.Frontmost
		fmt.Fprintf(&b, "in front: app %s (executable %s), window %q at (%d,%d) size %dx%d\n",
			f.Class, orUnknown(f.Exe), f.Title, f.Rect.X, f.Rect.Y, f.Rect.W, f.Rect.H)
	} else {
		b.WriteString("in front: no application window\n")
	}
	fmt.Fprintf(&b, "locked: %v\nsecure input: %v\naccessibility: %v\n", st.Locked, st.SecureInput, st.AtSPI)
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
