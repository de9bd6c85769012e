//go:build crewtest

package wall_test

import (
	"errors"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/tools/web/wall"
)

// TestCrewtestBuildAdmitsExactPairsOnly: the end-to-end build admits the
// listed host:port and nothing next to it (another port, the mapped form).
func TestCrewtestBuildAdmitsExactPairsOnly(t *testing.T) {
	if target := os.Getenv("WALL_TEST_CHILD_TARGET"); target != "" {
		c := wall.New().Client(5 * time.Second)
		resp, err := c.Get("http://" + target + "/")
		if err != nil {
			t.Fatalf("admitted %s: %v", target, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "SECRET-INTERNAL" {
			t.Fatalf("body %q", b)
		}
		ap := netip.MustParseAddrPort(target)
		other := netip.AddrPortFrom(ap.Addr(), ap.Port()+1)
		mapped := netip.AddrPortFrom(netip.AddrFrom16(ap.Addr().As16()), ap.Port())
		for _, x := range []netip.AddrPort{other, mapped} {
			if err := wall.New().CheckAddr(x); !errors.Is(err, wall.ErrRefused) {
				t.Errorf("%s admitted: %v", x, err)
			}
		}
		return
	}
	_, ap := loopbackServer(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrewtestBuildAdmitsExactPairsOnly$", "-test.count=1")
	cmd.Env = append(os.Environ(), "WALL_TEST_CHILD_TARGET="+ap.String(), wall.TestAllowEnv+"="+ap.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
