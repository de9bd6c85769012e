package browser

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Report is what crew doctor says of the browser: enabled (config.yaml
// browser_enabled) or not, which Chromium (chromium, "" for none found),
// where the profiles of the home at dir are, and which agents get which
// tools (users: "id (mode)").
func Report(enabled bool, chromium, dir string, users []string) []string {
	who := "no agent has the browser key"
	if len(users) > 0 {
		who = "agents: " + strings.Join(users, ", ")
	}
	switch {
	case !enabled:
		return []string{"browser: off (browser_enabled is not true in config.yaml); " + who}
	case chromium == "":
		return []string{"browser: enabled, but no Chromium found (install chromium): no agent gets browser tools; " + who}
	}
	return []string{fmt.Sprintf("browser: enabled, Chromium %s, one per agent, profiles in %s; %s", chromium, filepath.Join(dir, "browser"), who)}
}
