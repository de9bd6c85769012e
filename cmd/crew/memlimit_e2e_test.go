package main

import (
	"path/filepath"
	"testing"
)

// crew serve runs under a soft memory limit: config.yaml memory_limit_mb,
// 256 MiB when unset, and GOMEMLIMIT from the environment wins over
// both; /healthz details say which one the process has.
func TestServeSetsItsMemoryLimit(t *testing.T) {
	cases := []struct {
		name   string
		config string   // appended to config.yaml
		env    []string // of the serve process
		want   int64    // MiB
	}{
		{"default", "", []string{"GOMEMLIMIT="}, 256},
		{"memory_limit_mb", "memory_limit_mb: 96\n", []string{"GOMEMLIMIT="}, 96},
		{"GOMEMLIMIT wins", "memory_limit_mb: 96\n", []string{"GOMEMLIMIT=300MiB"}, 300},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			if _, stderr, code := crew(t, home, "init"); code != 0 {
				t.Fatalf("init: %s", stderr)
			}
			if c.config != "" {
				appendFile(t, filepath.Join(home, "config.yaml"), c.config)
			}
			s := startServe(t, home, c.env...)
			defer s.stop(t)
			var h struct {
				Details struct {
					Memory *struct {
						LimitMB int64 `json:"limit_mb"`
					} `json:"memory"`
				} `json:"details"`
			}
			getJSON(t, s.url+"/healthz", &h)
			if h.Details.Memory == nil {
				t.Fatal("/healthz details have no memory line")
			}
			if got := h.Details.Memory.LimitMB; got != c.want {
				t.Fatalf("memory limit %d MiB, want %d", got, c.want)
			}
		})
	}
}
