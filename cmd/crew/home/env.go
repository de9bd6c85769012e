package home

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// loadEnv reads the secrets file. A missing file is an empty one; a file
// other users can read is refused (R-HOME-1), because it holds API keys.
func loadEnv(path string) (map[string]string, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, readError(path, err)
	}
	if perm := fi.Mode().Perm(); perm&0o044 != 0 && runtime.GOOS != "windows" {
		return nil, &ConfigError{File: path, Msg: fmt.Sprintf(
			"mode %04o is readable by group/others; run: chmod 600 %s", perm, path)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, readError(path, err)
	}
	return parseEnv(path, string(data))
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parseEnv reads KEY=VALUE lines: blank lines and # comments are skipped, an
// "export " prefix is allowed, values may be quoted. Error messages never
// quote the line: it may be a pasted secret.
func parseEnv(path, data string) (map[string]string, error) {
	env := map[string]string{}
	for i, line := range strings.Split(data, "\n") {
		key, val, col, msg := parseEnvLine(strings.TrimSuffix(line, "\r"))
		if msg != "" {
			return nil, &ConfigError{File: path, Line: i + 1, Col: col, Key: key, Msg: msg}
		}
		if key != "" {
			env[key] = val
		}
	}
	return env, nil
}

// parseEnvLine returns the key and value of one line (key "" for a blank or
// comment line), or a message and the 1-based column it points at.
func parseEnvLine(line string) (key, val string, col int, msg string) {
	rest := strings.TrimLeft(line, " \t")
	col = len(line) - len(rest) + 1
	if rest == "" || rest[0] == '#' {
		return "", "", 0, ""
	}
	if after, ok := strings.CutPrefix(rest, "export "); ok {
		trimmed := strings.TrimLeft(after, " \t")
		col += len(rest) - len(trimmed)
		rest = trimmed
	}
	name, raw, ok := strings.Cut(rest, "=")
	if !ok {
		return "", "", col, "want KEY=VALUE"
	}
	name = strings.TrimRight(name, " \t")
	if !envName.MatchString(name) {
		return "", "", col, "invalid variable name: want letters, digits and _, not starting with a digit"
	}
	valCol := col + len(rest) - len(raw)
	val, offset, msg := parseEnvValue(raw)
	if msg != "" {
		return name, "", valCol + offset, name + ": " + msg
	}
	return name, val, 0, ""
}

// parseEnvValue unquotes a value. offset locates a problem within raw.
func parseEnvValue(raw string) (val string, offset int, msg string) {
	v := strings.TrimLeft(raw, " \t")
	lead := len(raw) - len(v)
	if v == "" || (v[0] != '"' && v[0] != '\'') {
		if i := strings.Index(v, " #"); i >= 0 { // trailing comment
			v = v[:i]
		}
		return strings.TrimRight(v, " \t"), 0, ""
	}
	quote := v[0]
	body, end, ok := scanQuoted(v[1:], quote)
	if !ok {
		return "", lead, "unterminated quoted value"
	}
	if tail := strings.TrimLeft(v[1+end+1:], " \t"); tail != "" && tail[0] != '#' {
		return "", lead + 1 + end + 1, "unexpected text after the closing quote"
	}
	return body, 0, ""
}

// scanQuoted reads up to the closing quote. Double quotes understand \" \\
// \n \t; single quotes are literal, as in a shell.
func scanQuoted(s string, quote byte) (body string, end int, ok bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == quote:
			return b.String(), i, true
		case c == '\\' && quote == '"' && i+1 < len(s):
			i++
			b.WriteByte(unescape(s[i]))
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	}
	return c // \" \\ and anything else: the character itself
}

// Secrets crew generates and keeps in the env file.
const (
	// AuditKeyVar keys the hash chain of exports (crew export / verify).
	AuditKeyVar = "CREW_AUDIT_KEY"
	// AuthTokenVar is the token of a server listening beyond loopback.
	AuthTokenVar = "CREW_AUTH_TOKEN"
)

// NewSecret returns 32 random bytes, base64url (43 characters).
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ReadEnvFile reads an env file as Load does: a missing file is empty, one
// that others can read is refused.
func ReadEnvFile(path string) (map[string]string, error) { return loadEnv(path) }

// EnsureEnvSecret returns the value of name in <dir>/env, first adding
// name=gen() with a comment line when the file has none (or an empty one).
// The file is rewritten atomically, mode 0600, keeping every existing line.
func EnsureEnvSecret(dir, name, comment string, gen func() string) (value string, created bool, err error) {
	path := filepath.Join(dir, "env")
	env, err := loadEnv(path)
	if err != nil {
		return "", false, err
	}
	if v := env[name]; v != "" {
		return v, false, nil
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false, readError(path, err)
	}
	value = gen()
	var b strings.Builder
	b.Write(old)
	if len(old) > 0 && old[len(old)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString("# " + comment + "\n" + name + "=" + value + "\n")
	if err := WriteFileAtomic(path, []byte(b.String()), 0o600); err != nil {
		return "", false, err
	}
	return value, true, nil
}
