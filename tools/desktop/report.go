package desktop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
)

// HelperReport is what crew doctor says of the desktop helper of the home
// at dir: whether it answers on the home's socket, its version, display
// and whether AT-SPI answers.
func HelperReport(ctx context.Context, dir string) string {
	sock := wire.SocketPath(dir)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ans, err := wire.Call(ctx, sock, wire.Request{Op: wire.OpState})
	switch {
	case errors.Is(err, wire.ErrNotRunning):
		return fmt.Sprintf("desktop helper: not running (%v); start it in the graphical session: crew-desktop --home %s", err, dir)
	case err != nil:
		return fmt.Sprintf("desktop helper: not used: %v", err)
	case ans.Error != "" || ans.State == nil:
		return fmt.Sprintf("desktop helper: answered with an error: %s", ans.Error)
	}
	st := ans.State
	atspi := "AT-SPI answers"
	if !st.AtSPI {
		atspi = "AT-SPI does not answer (no outlines: screenshots and coordinates only)"
	}
	return fmt.Sprintf("desktop helper: %s (protocol %d) at %s, display %s %dx%d, %s",
		st.Helper, st.Version, sock, st.Display, st.Width, st.Height, atspi)
}
