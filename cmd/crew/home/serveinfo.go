package home

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// ServeInfo is written by a running server (data/serve.json) so other
// commands can reach it while it holds the store.
type ServeInfo struct {
	PID int    `json:"pid"`
	URL string `json:"url"`
	// Listen is the address the server's listener has (the port chosen
	// for :0, 0.0.0.0 when it listens on every address).
	Listen string `json:"listen,omitempty"`
}

// WriteServeInfo writes data/serve.json of the home at homeDir.
func WriteServeInfo(homeDir string, info ServeInfo) error {
	b, _ := json.Marshal(info)
	return WriteFileAtomic(filepath.Join(homeDir, "data", "serve.json"), b, 0o600)
}

// ReadServeInfo reads data/serve.json of the home at homeDir; the zero
// ServeInfo (no URL) with the error when it cannot.
func ReadServeInfo(homeDir string) (ServeInfo, error) {
	var info ServeInfo
	b, err := os.ReadFile(filepath.Join(homeDir, "data", "serve.json"))
	if err != nil {
		return ServeInfo{}, fmt.Errorf("the store is locked but no running server was found: %w", err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return ServeInfo{}, fmt.Errorf("read %s: %w", filepath.Join(homeDir, "data", "serve.json"), err)
	}
	return info, nil
}
