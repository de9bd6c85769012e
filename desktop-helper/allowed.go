package main

import (
	"bytes"
	"image"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
)

// allowedApps returns how the helper finds its allowed apps: the --apps
// flag when given (comma-separated), else, read again for each request,
// the union of computer_apps of every agent of the home (agent.yaml and
// agents/*/agent.yaml) with computer: "on". A client never names them.
func allowedApps(home, flagValue string) func() []string {
	if flagValue != "" {
		var apps []string
		for _, a := range strings.Split(flagValue, ",") {
			if a = strings.TrimSpace(a); a != "" {
				apps = append(apps, a)
			}
		}
		return func() []string { return apps }
	}
	return func() []string {
		files, _ := filepath.Glob(filepath.Join(home, "agents", "*", "agent.yaml"))
		var apps []string
		for _, f := range append([]string{filepath.Join(home, "agent.yaml")}, files...) {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var a struct {
				Computer     string   `yaml:"computer"`
				ComputerApps []string `yaml:"computer_apps"`
			}
			if yaml.Unmarshal(data, &a) != nil || a.Computer != "on" {
				continue
			}
			for _, app := range a.ComputerApps {
				if !slices.Contains(apps, app) {
					apps = append(apps, app)
				}
			}
		}
		return apps
	}
}

// onlyAllowed keeps of a screenshot of r (a PNG) only what windows of
// allowed apps show: painted bottom to top, an allowed window's pixels,
// every other window and the background black.
func (h *helper) onlyAllowed(data []byte, r wire.Rect, allowed []string) ([]byte, error) {
	src, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	b := src.Bounds()
	out := image.NewRGBA(b)
	draw.Draw(out, b, image.Black, image.Point{}, draw.Src)
	wins := h.d.apps()
	for i := len(wins) - 1; i >= 0; i-- { // bottom first
		w := wins[i]
		wr := h.d.rect(w.top)
		rect := image.Rect(wr.X-r.X, wr.Y-r.Y, wr.X-r.X+wr.W, wr.Y-r.Y+wr.H).Add(b.Min).Intersect(b)
		if rect.Empty() {
			continue
		}
		if w.app.Matches(allowed) {
			draw.Draw(out, rect, src, rect.Min, draw.Src)
		} else {
			draw.Draw(out, rect, image.Black, image.Point{}, draw.Src)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
