package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
)

// TestASecureFieldIsNeverActedOn (R-DSK): gtk3-demo's entry_buffer shows an
// entry and a password entry sharing one buffer. The outline marks the
// password entry secure without its value; a click on it is refused; with
// the focus moved onto it by Tab, state says secure input and typing is
// refused. Then bringing the factory back to the front works, and
// bringing an app of another name is refused. (Runs after helper_test.go's
// tests, which want the factory in front.)
func TestASecureFieldIsNeverActedOn(t *testing.T) {
	f := desktop(t)
	if _, err := exec.LookPath("gtk3-demo"); err != nil {
		t.Skip("no gtk3-demo (apt-get install gtk-3-examples)")
	}
	if _, err := f.sess.StartApp(nil, "gtk3-demo", "--run=entry_buffer"); err != nil {
		t.Fatal(err)
	}
	apps := []string{"gtk3-demo", factoryApp}
	f.allow(t, apps...) // as the home's computer_apps would
	var ans wire.Answer
	eventually(t, "gtk3-demo's entries in front", func() bool {
		ans = f.call(t, wire.Request{Op: wire.OpObserve})
		return ans.Error == "" && strings.Contains(ans.Outline, "password text")
	})
	if strings.Contains(ans.Outline, "password text [ref=") && !strings.Contains(ans.Outline, "(editable, secure)") {
		t.Fatalf("the password field is not marked secure:\n%s", ans.Outline)
	}
	for _, l := range strings.Split(ans.Outline, "\n") {
		if strings.Contains(l, "password text") && strings.Contains(l, "value=") {
			t.Fatalf("the outline shows a password field's value: %s", l)
		}
	}
	secret := refWhere(t, ans.Outline, `password text \[ref=e\d+\]`)
	entry := refWhere(t, ans.Outline, `text \[ref=e\d+\] \(editable\)`)
	if got := f.act(t, wire.Act{Action: wire.ActClick, FrameID: ans.FrameID, Ref: secret}, apps...); got.Code != wire.CodeSecure {
		t.Fatalf("click on the password field: %+v", got)
	}
	for _, a := range []wire.Act{
		{Action: wire.ActClick, FrameID: ans.FrameID, Ref: entry},
		{Action: wire.ActKey, FrameID: ans.FrameID, Keys: "Tab"},
	} {
		if got := f.act(t, a, apps...); got.Error != "" {
			t.Fatalf("%s: %+v", a.Action, got)
		}
	}
	eventually(t, "the focus on the password field", func() bool {
		st := f.call(t, wire.Request{Op: wire.OpState}).State
		return st != nil && st.SecureInput
	})
	if got := f.act(t, wire.Act{Action: wire.ActType, FrameID: ans.FrameID, Text: "hunter2"}, apps...); got.Code != wire.CodeSecure {
		t.Fatalf("typing with the focus on the password field: %+v", got)
	}
	if _, text := f.atspiOf(t, entry); strings.Contains(text, "hunter2") {
		t.Fatal("the text reached the shared buffer")
	}

	if got := f.act(t, wire.Act{Action: wire.ActFront, FrameID: ans.FrameID, App: "xterm"}, append(apps, "xterm")...); got.Code != wire.CodeFailed || !strings.Contains(got.Error, "no window of xterm") {
		t.Fatalf("front of an app with no window: %+v", got)
	}
	if got := f.act(t, wire.Act{Action: wire.ActFront, FrameID: ans.FrameID, App: factoryApp}, apps...); got.Error != "" {
		t.Fatalf("front: %+v", got)
	}
	if st := f.call(t, wire.Request{Op: wire.OpState}).State; st == nil || !st.Frontmost.Matches([]string{factoryApp}) {
		t.Fatalf("after front: %+v", st.Frontmost)
	}
}
