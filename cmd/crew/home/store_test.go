package home

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
)

// config.yaml's nats: as where the home keeps its log: the embedded
// server's settings under data/, or nats.url with this home's node id,
// made once and read again; a node-id file that is not one says so,
// under the nats.url without its password.
func TestNATSConfigStoreIsWhereTheHomeKeepsItsLog(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := NATSConfig{Sync: events.SyncInterval, Listen: "127.0.0.1:4222"}.Store(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Dir != filepath.Join(dir, "data") || c.Server.Sync != events.SyncInterval || c.Server.Listen != "127.0.0.1:4222" || !c.Server.CollectWhenQuiet || c.Client.URL != "" || c.Node != "" {
		t.Errorf("embedded: %+v", c)
	}
	url := NATSConfig{URL: "nats://crew:secret@n1:4222", Creds: "crew.creds"}
	c, err = url.Store(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := url.Store(dir)
	if err != nil || c.Node == "" || again.Node != c.Node || c.Client.URL != url.URL || c.Client.Creds != "crew.creds" {
		t.Errorf("at nats.url: node %q then %q (%v), client %+v", c.Node, again.Node, err, c.Client)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "node-id"), []byte("not a node id!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := url.Store(dir); err == nil || !strings.HasPrefix(err.Error(), "nats.url nats://crew:xxxxx@n1:4222: ") || !strings.Contains(err.Error(), "is not a node id") {
		t.Errorf("a bad node-id file: %v", err)
	}
}
