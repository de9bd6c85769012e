package events

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// ClientConfig connects to an existing NATS server or cluster (config.yaml
// nats.url) instead of the embedded server.
type ClientConfig struct {
	// URL is one server URL or several, comma-separated
	// ("nats://n1:4222,nats://n2:4222"); the cluster gossips the rest.
	URL string
	// Creds is a NATS credentials file (JWT and seed); empty: none.
	Creds string
	// TLSCA, TLSCert and TLSKey are PEM files: the CA that signed the
	// servers' certificates, and a client certificate with its key.
	TLSCA, TLSCert, TLSKey string
	// Name is the connection's name ("crew" when empty); Logger, when
	// set, gets each loss and reconnection at warn.
	Name   string
	Logger *slog.Logger
}

// Connect dials the servers of cfg. A server that cannot be reached fails
// at once (no retry at start: the owner should know), with the URL in the
// error and any password in it masked; once connected, the connection
// reconnects forever.
func Connect(cfg ClientConfig) (*nats.Conn, error) {
	shown := RedactURL(cfg.URL)
	if cfg.URL == "" {
		return nil, errors.New("connect nats: empty url")
	}
	name := cfg.Name
	if name == "" {
		name = "crew"
	}
	opts := []nats.Option{nats.Name(name), nats.Timeout(5 * time.Second), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second)}
	if cfg.Logger != nil {
		opts = append(opts, ConnectionEvents(cfg.Logger, name, nil)...)
	}
	if cfg.Creds != "" {
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	}
	if cfg.TLSCA != "" {
		opts = append(opts, nats.RootCAs(cfg.TLSCA))
	}
	if cfg.TLSCert != "" || cfg.TLSKey != "" {
		opts = append(opts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats.url %s: cannot connect: %w", shown, err)
	}
	return nc, nil
}

// RedactURL masks the password of each URL in a comma-separated list.
func RedactURL(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// ClusterSize is how many servers the connection knows of: the ones given
// and the ones the cluster told it about (1 for a lone server).
func ClusterSize(nc *nats.Conn) int {
	if nc.ConnectedClusterName() == "" {
		return 1
	}
	return max(len(nc.Servers()), 1)
}
