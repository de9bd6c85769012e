package events_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// testKey is an audit key for the tests.
var testKey = []byte("0123456789abcdef0123456789abcdef-test-key")

func exportOf(t *testing.T, n int) []byte {
	t.Helper()
	return exportWith(t, n, testKey)
}

func exportWith(t *testing.T, n int, key []byte) []byte {
	t.Helper()
	_, log := eventstest.Start(t)
	ctx := t.Context()
	var envs []events.Envelope
	for i := range n {
		envs = append(envs, msg(strings.Repeat("x", i)))
	}
	if _, err := log.Append(ctx, events.Conv("c1"), 0, envs...); err != nil {
		t.Fatal(err)
	}
	log.Append(ctx, events.Conv("c2"), 0, msg("not exported"))
	var buf bytes.Buffer
	count, err := events.WriteExport(&buf, "c1", key, log.Read(ctx, events.Conv("c1").Filter(), 0))
	if err != nil || count != n {
		t.Fatalf("export: %d, %v", count, err)
	}
	return buf.Bytes()
}

func TestExportRoundTripsThroughVerify(t *testing.T) {
	v, err := events.VerifyExport(bytes.NewReader(exportOf(t, 5)), testKey)
	if err != nil || v.Conversation != "c1" || v.Events != 5 || !v.Proven {
		t.Fatalf("verify = %+v, %v; want c1, 5 events, proven", v, err)
	}
	v, err = events.VerifyExport(bytes.NewReader(exportOf(t, 0)), testKey)
	if err != nil || v.Events != 0 || !v.Proven {
		t.Fatalf("empty export: verify = %+v, %v", v, err)
	}
}

func TestVerifyNamesFirstBrokenLine(t *testing.T) {
	good := exportOf(t, 5)
	lines := strings.SplitAfter(string(good), "\n")
	lines = lines[:len(lines)-1] // trailing empty piece
	join := func(ls ...string) []byte { return []byte(strings.Join(ls, "")) }
	flipByte := func(s string, i int) string { b := []byte(s); b[i] ^= 1; return string(b) }
	cases := []struct {
		name     string
		file     []byte
		wantLine int
	}{
		{"one byte of line 3 altered", join(lines[0], lines[1], strings.Replace(lines[2], "xx", "xy", 1), lines[3], lines[4], lines[5]), 3},
		{"a byte inside line 1's data", join(flipByte(lines[0], strings.Index(lines[0], `"data"`)+12), lines[1], lines[2], lines[3], lines[4], lines[5]), 1},
		{"line 2 removed", join(lines[0], lines[2], lines[3], lines[4], lines[5]), 2},
		{"lines 2 and 3 swapped", join(lines[0], lines[2], lines[1], lines[3], lines[4], lines[5]), 2},
		{"last event removed", join(lines[0], lines[1], lines[2], lines[3], lines[5]), 5},
		{"end line removed", join(lines[0], lines[1], lines[2], lines[3], lines[4]), 6},
		{"first line's prev altered", join(flipByte(lines[0], strings.Index(lines[0], `"prev":"`)+9), lines[1], lines[2], lines[3], lines[4], lines[5]), 1},
		{"hash of line 4 altered", join(lines[0], lines[1], lines[2], flipByte(lines[3], len(lines[3])-5), lines[4], lines[5]), 4},
		{"line appended after end", join(append(lines, lines[0])...), 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := events.VerifyExport(bytes.NewReader(c.file), testKey)
			var ble *events.BrokenLineError
			if !errors.As(err, &ble) || !errors.Is(err, events.ErrBrokenExport) {
				t.Fatalf("err = %v, want a BrokenLineError", err)
			}
			if ble.Line != c.wantLine {
				t.Errorf("broken line = %d (%v), want %d", ble.Line, err, c.wantLine)
			}
		})
	}
}

// Whatever single byte is altered, verify fails and names the line holding it.
func TestVerifyNamesTheLineOfAnyAlteredByte(t *testing.T) {
	good := exportOf(t, 3)
	line := 1
	for i := range good {
		if good[i] == '\n' {
			line++
			continue
		}
		bad := bytes.Clone(good)
		bad[i] ^= 0x01
		if bad[i] == '\n' {
			continue
		}
		_, err := events.VerifyExport(bytes.NewReader(bad), testKey)
		var ble *events.BrokenLineError
		if !errors.As(err, &ble) || ble.Line != line {
			t.Fatalf("byte %d (line %d) altered: err = %v", i, line, err)
		}
	}
}

// forge rewrites line n (1-based) of an export with edit and recomputes the
// plain SHA-256 chain from there on, as the 10-line script did; the
// keyed hashes (mac) it cannot recompute are kept, or dropped with strip.
func forge(t *testing.T, export []byte, n int, edit func(string) string, strip bool) []byte {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(export), "\n"), "\n")
	prev := ""
	for i, l := range lines {
		cut := strings.LastIndex(l, `,"hash":"`)
		content, sealed := l[:cut], l[cut:]
		mac := ""
		if j := strings.Index(sealed, `","mac":"`); j >= 0 && !strip {
			mac = sealed[j+len(`","mac":"`) : len(sealed)-2]
		}
		if i+1 == n {
			content = edit(content)
		}
		if i+1 > n {
			p := strings.LastIndex(content, `"prev":"`)
			content = content[:p] + `"prev":"` + prev + `"`
		}
		sum := sha256.Sum256([]byte(content + "}"))
		prev = hex.EncodeToString(sum[:])
		l = content + `,"hash":"` + prev
		if mac != "" {
			l += `","mac":"` + mac
		}
		lines[i] = l + `"}`
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// Item 9: editing a message and recomputing the plain chain passes an
// integrity check, but the keyed chain names the edited line.
func TestForgedExportFailsKeyedVerify(t *testing.T) {
	good := exportOf(t, 4)
	forged := forge(t, good, 3, func(l string) string { return strings.Replace(l, `"text":"xx"`, `"text":"pay"`, 1) }, false)
	if bytes.Equal(forged, good) {
		t.Fatal("the forgery changed nothing")
	}
	// Without the key the forgery passes: a plain chain proves nothing.
	if v, err := events.VerifyExport(bytes.NewReader(forged), nil); err != nil || v.Proven || !v.Keyed {
		t.Fatalf("without key: %+v, %v; want intact, keyed, not proven", v, err)
	}
	_, err := events.VerifyExport(bytes.NewReader(forged), testKey)
	var ble *events.BrokenLineError
	if !errors.As(err, &ble) || ble.Line != 3 || !strings.Contains(err.Error(), "keyed hash fails") {
		t.Fatalf("with key: err = %v, want line 3: keyed hash fails", err)
	}
	// Another home's key fails at line 1.
	_, err = events.VerifyExport(bytes.NewReader(good), []byte("another home's audit key, 32 bytes or more"))
	if !errors.As(err, &ble) || ble.Line != 1 {
		t.Fatalf("wrong key: err = %v, want line 1", err)
	}
	// Dropping every mac leaves an unkeyed export: intact, origin not proven.
	stripped := forge(t, good, 3, func(l string) string { return strings.Replace(l, `"text":"xx"`, `"text":"pay"`, 1) }, true)
	if v, err := events.VerifyExport(bytes.NewReader(stripped), testKey); err != nil || v.Proven || v.Keyed {
		t.Fatalf("stripped: %+v, %v; want intact and not proven", v, err)
	}
	// Dropping one mac is caught.
	lines := strings.SplitAfter(string(good), "\n")
	l2 := lines[1]
	lines[1] = l2[:strings.Index(l2, `","mac":"`)] + "\"}\n"
	if _, err := events.VerifyExport(bytes.NewReader([]byte(strings.Join(lines, ""))), nil); !errors.As(err, &ble) || ble.Line != 2 {
		t.Fatalf("one mac dropped: err = %v, want line 2", err)
	}
}

// Exports written before keyed chains verify as integrity only.
func TestOldExportVerifiesIntegrityOnly(t *testing.T) {
	old := exportWith(t, 3, nil)
	if bytes.Contains(old, []byte(`"mac"`)) {
		t.Fatal("a plain export carries a mac")
	}
	for _, key := range [][]byte{nil, testKey} {
		v, err := events.VerifyExport(bytes.NewReader(old), key)
		if err != nil || v.Events != 3 || v.Keyed || v.Proven {
			t.Errorf("key %q: %+v, %v; want 3 events, integrity only", key, v, err)
		}
	}
	if _, err := events.WriteExport(io.Discard, "c1", []byte("short"), nil); err == nil {
		t.Error("a short audit key was accepted")
	}
}
