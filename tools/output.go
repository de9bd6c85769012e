package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/my-agent-crew/crew/events"
)

// Truncate cuts out to its first max characters (Unicode code points) and
// says so in a last line that tells the model how to read on. When out fits,
// or max <= 0, it is returned unchanged with truncated false.
func Truncate(out string, max int) (shown string, truncated bool) {
	if max <= 0 || len(out) <= max {
		return out, false
	}
	total := utf8.RuneCountInString(out)
	if total <= max {
		return out, false
	}
	cut, n := 0, 0
	for i := range out {
		if n == max {
			cut = i
			break
		}
		n++
	}
	return fmt.Sprintf("%s\n[output cut at %d of %d characters; the full output is saved: call tool_output_read with this call's call_id and offset %d to read on]",
		out[:cut], max, total, max), true
}

// Spill saves the full output of call callID in env's spills (Env.Spills,
// else files under env.SpillDir), redacted with r (the home's secrets),
// and returns its path relative to the home directory,
// "spill/<conversation>/<file>", for the tool_completed event: the name
// tool_output_read and the pages find it by.
func Spill(r *events.Redactor, env Env, callID, full string) (relPath string, err error) {
	return spillFile(r, env, callID, spillName(callID), []byte(full))
}

// SpillImage saves the n-th image part of call callID in env's spills and
// returns its path relative to the home, as Spill does. The MIME type must
// be an image type; it names the file's extension.
func SpillImage(r *events.Redactor, env Env, callID string, n int, mime string, data []byte) (relPath string, err error) {
	ext, ok := imageExt[mime]
	if !ok {
		return "", fmt.Errorf("tools: spill %s: %q is not an image type this harness keeps (png, jpeg, gif, webp)", callID, mime)
	}
	name := strings.TrimSuffix(spillName(callID), ".txt") + fmt.Sprintf("-%d", n) + ext
	return spillFile(r, env, callID, name, data)
}

var imageExt = map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}

func spillFile(r *events.Redactor, env Env, callID, name string, data []byte) (string, error) {
	store, conv, err := env.spills()
	if err != nil {
		return "", fmt.Errorf("tools: spill: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), spillWait)
	defer cancel()
	if err := store.Put(ctx, conv, name, r.Bytes(data)); err != nil {
		return "", fmt.Errorf("tools: spill %s: %w", callID, err)
	}
	return path.Join("spill", conv, name), nil
}

// spills are where env's spills go, and its conversation: Env.Spills, or
// files in the folder above Env.SpillDir.
func (env Env) spills() (Spills, string, error) {
	if env.Spills != nil {
		if events.ValidID(env.Conversation) != nil {
			return nil, "", fmt.Errorf("no conversation to keep spills under (%q)", env.Conversation)
		}
		return env.Spills, env.Conversation, nil
	}
	if env.SpillDir == "" || !filepath.IsAbs(env.SpillDir) {
		return nil, "", fmt.Errorf("SpillDir %q is not an absolute path", env.SpillDir)
	}
	return SpillDir(filepath.Dir(env.SpillDir)), filepath.Base(env.SpillDir), nil
}

// spillName maps a call id to a file name: ids made of safe characters are
// kept (readable on disk), others are hashed, so no id can name a path
// outside the spill dir.
func spillName(callID string) string {
	safe := callID != "" && len(callID) <= 128 && callID[0] != '.'
	for _, c := range callID {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			safe = false
			break
		}
	}
	if safe {
		return callID + ".txt"
	}
	sum := sha256.Sum256([]byte(callID))
	return "=" + hex.EncodeToString(sum[:16]) + ".txt" // '=' never starts a kept id

}
