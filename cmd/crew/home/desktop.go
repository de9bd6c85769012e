package home

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
)

// DesktopReport says whether the desktop helper answers on this home's
// socket (its version, display and whether AT-SPI answers), and which
// agents have the computer tools.
func (h *Home) DesktopReport(ctx context.Context) []string {
	sock := wire.SocketPath(h.Dir)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var lines []string
	ans, err := wire.Call(ctx, sock, wire.Request{Op: wire.OpState})
	switch {
	case errors.Is(err, wire.ErrNotRunning):
		lines = append(lines, fmt.Sprintf("desktop helper: not running (%v); start it in the graphical session: crew-desktop --home %s", err, h.Dir))
	case err != nil:
		lines = append(lines, fmt.Sprintf("desktop helper: not used: %v", err))
	case ans.Error != "" || ans.State == nil:
		lines = append(lines, fmt.Sprintf("desktop helper: answered with an error: %s", ans.Error))
	default:
		st := ans.State
		atspi := "AT-SPI answers"
		if !st.AtSPI {
			atspi = "AT-SPI does not answer (no outlines: screenshots and coordinates only)"
		}
		lines = append(lines, fmt.Sprintf("desktop helper: %s (protocol %d) at %s, display %s %dx%d, %s",
			st.Helper, st.Version, sock, st.Display, st.Width, st.Height, atspi))
	}
	for _, id := range slices.Sorted(maps.Keys(h.Agents)) {
		a := h.Agents[id]
		if !a.ComputerOn() {
			continue
		}
		apps := strings.Join(a.ComputerApps, ", ")
		if apps == "" {
			apps = "none (computer_act refuses everything)"
		}
		lines = append(lines, fmt.Sprintf("  agent %s: computer on, computer_apps %s", id, apps))
		if shellReachesDisplay(a) {
			lines = append(lines, fmt.Sprintf("  agent %s: its shell_run commands can reach the X display and the session bus around the computer tools' rules; set shell_network: false", id))
		}
	}
	return lines
}

// shellReachesDisplay: the agent may run shell commands that are not
// barred from Unix sockets (only shell_network: false bars them).
func shellReachesDisplay(a *Agent) bool {
	hasShell := len(a.Tools) == 0 || slices.Contains(a.Tools, "shell_run")
	return hasShell && (a.ShellNetwork == nil || *a.ShellNetwork)
}
