package shell

import (
	"strings"
	"testing"
)

// TestReportListsEveryProtection: doctor's section has one line per
// protection under its heading, and a bad policy is one line naming the
// setting.
func TestReportListsEveryProtection(t *testing.T) {
	n := Network{Ports: []int{8080}}
	box, err := New(n)
	if err != nil {
		t.Fatal(err)
	}
	want := box.Protections()
	got := Report(n)
	if len(got) != len(want)+1 || !strings.HasPrefix(got[0], "shell protections (") {
		t.Fatalf("Report = %q, want a heading and %d protections", got, len(want))
	}
	for i, p := range want {
		if got[i+1] != "  "+p.Name+": "+p.Detail {
			t.Errorf("line %d = %q, want %s's", i+1, got[i+1], p.Name)
		}
	}
	bad := Report(Network{Ports: []int{0}})
	if len(bad) != 1 || !strings.HasPrefix(bad[0], "shell protections: ") || !strings.Contains(bad[0], "shell_ports") {
		t.Errorf("Report of a bad policy = %q, want one line naming shell_ports", bad)
	}
}
