//go:build crewtest

package wall

import (
	"net/netip"
	"os"
	"strings"
)

// TestAllowEnv names the end-to-end tests' admission list: comma-separated
// host:port pairs (IP literals) that the crewtest build's wall connects to
// although they are not public. Only this build reads it.
const TestAllowEnv = "CREW_TEST_ALLOW_ADDRS"

func init() {
	for _, s := range strings.Split(os.Getenv(TestAllowEnv), ",") {
		if ap, err := netip.ParseAddrPort(strings.TrimSpace(s)); err == nil {
			if testAllow == nil {
				testAllow = map[netip.AddrPort]bool{}
			}
			testAllow[ap] = true
		}
	}
}
