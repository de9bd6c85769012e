package home

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/my-agent-crew/crew/events"
)

// VerifyKey finds the audit key crew verify checks with, and says where
// from: none with --no-key (noKey); the key file; else the process
// environment's or that of the home at dir ("" for none), never created
// here.
func VerifyKey(dir, keyFile string, noKey bool, getenv func(string) string) (key []byte, why string, err error) {
	switch {
	case noKey && keyFile != "":
		return nil, "", errors.New("--no-key and --key-file exclude each other")
	case noKey:
		return nil, "checked without the audit key: --no-key", nil
	case keyFile != "":
		v, err := readKeyFile(keyFile)
		if err != nil {
			return nil, "", err
		}
		return []byte(v), "audit key from " + keyFile, nil
	}
	if v := getenv(AuditKeyVar); v != "" {
		return checkedKey(v, AuditKeyVar+" in the process environment")
	}
	if dir == "" {
		return nil, "checked without the audit key: no home", nil
	}
	path := filepath.Join(dir, "env")
	vars, err := ReadEnvFile(path)
	if err != nil {
		return nil, "", err
	}
	if vars[AuditKeyVar] == "" {
		return nil, fmt.Sprintf("checked without the audit key: %s has no %s", path, AuditKeyVar), nil
	}
	return checkedKey(vars[AuditKeyVar], "audit key of "+dir)
}

func checkedKey(v, where string) ([]byte, string, error) {
	if len(v) < events.MinAuditKey {
		return nil, "", fmt.Errorf("%s is %d bytes, want at least %d", where, len(v), events.MinAuditKey)
	}
	return []byte(v), where, nil
}

// readKeyFile reads a key file: one line holding the key, or an env file
// with a CREW_AUDIT_KEY= line.
func readKeyFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--key-file: %w", err)
	}
	var key string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "export "))
		if v, ok := strings.CutPrefix(line, AuditKeyVar+"="); ok {
			key = strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	if key == "" {
		if t := strings.TrimSpace(string(b)); t != "" && !strings.ContainsAny(t, "\n=") {
			key = t
		}
	}
	if key == "" {
		return "", fmt.Errorf("--key-file %s: want the key alone on one line, or a %s= line", path, AuditKeyVar)
	}
	_, _, err = checkedKey(key, "the key in "+path)
	return key, err
}
