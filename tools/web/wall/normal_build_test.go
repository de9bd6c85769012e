//go:build !crewtest

package wall_test

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/tools/web/wall"
)

// TestNormalBuildRefusesLoopbackWithTestAllowSet (R-SEC-2, no off switch):
// a build without the crewtest tag, started with CREW_TEST_ALLOW_ADDRS
// naming a loopback server, still refuses it. The test binary runs itself
// again with the variable in its environment from the start, as a
// served crew would have it.
func TestNormalBuildRefusesLoopbackWithTestAllowSet(t *testing.T) {
	if target := os.Getenv("WALL_TEST_CHILD_TARGET"); target != "" {
		_, err := wall.New().Client(5 * time.Second).Get("http://" + target + "/")
		if !errors.Is(err, wall.ErrRefused) {
			t.Fatalf("normal build reached %s with CREW_TEST_ALLOW_ADDRS=%s: %v", target, os.Getenv("CREW_TEST_ALLOW_ADDRS"), err)
		}
		return
	}
	_, ap := loopbackServer(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestNormalBuildRefusesLoopbackWithTestAllowSet$", "-test.count=1")
	cmd.Env = append(os.Environ(), "WALL_TEST_CHILD_TARGET="+ap.String(), "CREW_TEST_ALLOW_ADDRS="+ap.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
