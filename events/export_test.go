package events_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

func exportOf(t *testing.T, n int) []byte {
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
	count, err := events.WriteExport(&buf, "c1", log.Read(ctx, events.Conv("c1").Filter(), 0))
	if err != nil || count != n {
		t.Fatalf("export: %d, %v", count, err)
	}
	return buf.Bytes()
}

func TestExportRoundTripsThroughVerify(t *testing.T) {
	conv, n, err := events.VerifyExport(bytes.NewReader(exportOf(t, 5)))
	if err != nil || conv != "c1" || n != 5 {
		t.Fatalf("verify = %q, %d, %v; want c1, 5, nil", conv, n, err)
	}
	conv, n, err = events.VerifyExport(bytes.NewReader(exportOf(t, 0)))
	if err != nil || n != 0 {
		t.Fatalf("empty export: verify = %q, %d, %v", conv, n, err)
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
			_, _, err := events.VerifyExport(bytes.NewReader(c.file))
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
		_, _, err := events.VerifyExport(bytes.NewReader(bad))
		var ble *events.BrokenLineError
		if !errors.As(err, &ble) || ble.Line != line {
			t.Fatalf("byte %d (line %d) altered: err = %v", i, line, err)
		}
	}
}
