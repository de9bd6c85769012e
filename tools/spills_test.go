package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// Issue 30 item 4: a spill is kept in the log's object store, so
// tool_output_read of another process on the same store (here a second
// connection's ObjectSpills) reads it; a fork's copy is there too; what
// was never kept is fs.ErrNotExist, which tool_output_read tells the
// model as data.
func TestSpillsInTheObjectStoreAreReadThroughAnotherOpening(t *testing.T) {
	srv, _ := eventstest.Start(t)
	ctx := t.Context()
	logger := slog.New(slog.DiscardHandler)
	a, err := OpenSpills(ctx, srv.Conn(), t.TempDir(), time.Hour, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	secrets := events.NewRedactor()
	secrets.Add("API_KEY", "sk-spilled-secret-0123456789")
	full := strings.Repeat("line of output\n", 2000) + "sk-spilled-secret-0123456789 the end"
	env := Env{Conversation: "c1", Spills: a}
	rel, err := Spill(secrets, env, "call_1", full)
	if err != nil || rel != "spill/c1/call_1.txt" {
		t.Fatalf("Spill = %q, %v", rel, err)
	}
	b, err := OpenSpills(ctx, srv.Conn(), t.TempDir(), time.Hour, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	read := func(s Spills, conv, call string, offset int) Result {
		t.Helper()
		args, _ := json.Marshal(map[string]any{"call_id": call, "offset": offset})
		res, err := NewFunc[toolOutputReadArgs](ToolOutputRead{}).Run(ctx, Env{Conversation: conv, Spills: s}, args)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := read(b, "c1", "call_1", 30000); res.IsError || !strings.Contains(res.Output, "[redacted:API_KEY] the end") || strings.Contains(res.Output, "sk-spilled") {
		t.Errorf("the other opening reads %q (error %v), want the redacted end", res.Output, res.IsError)
	}
	if err := b.Copy(ctx, "c1", "fork-1"); err != nil {
		t.Fatal(err)
	}
	if res := read(a, "fork-1", "call_1", 0); res.IsError || !strings.HasPrefix(res.Output, "line of output") {
		t.Errorf("the fork's copy reads %q (error %v)", res.Output, res.IsError)
	}
	if res := read(a, "c2", "call_1", 0); !res.IsError || !strings.Contains(res.Output, "no saved output") {
		t.Errorf("another conversation's call reads %q, want no saved output", res.Output)
	}
	if _, err := b.Get(ctx, "c1", "nothing.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Get of nothing kept: %v, want fs.ErrNotExist", err)
	}
}

// A spill goes once its max age after its write has passed (the object
// store's TTL: crew serve opens it with SpillMaxAge, 7 days, and no sweep
// runs); here the age is one second.
func TestSpillsGoAfterTheirMaxAge(t *testing.T) {
	if SpillMaxAge != 7*24*time.Hour {
		t.Errorf("SpillMaxAge = %v, want 7 days", SpillMaxAge)
	}
	srv, _ := eventstest.Start(t)
	ctx := t.Context()
	s, err := OpenSpills(ctx, srv.Conn(), t.TempDir(), time.Second, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "c1", "call_1.txt", []byte("the whole output")); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Get(ctx, "c1", "call_1.txt"); err != nil || string(b) != "the whole output" {
		t.Fatalf("Get right after Put = %q, %v", b, err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := s.Get(ctx, "c1", "call_1.txt")
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the spill is still there 30 s after its max age of 1 s")
		}
	}
}

// An older home kept its spills in files under spill/<conversation>/;
// the first open moves them into the object store (the files and their
// folders go, a write a crash cut is dropped) and says so; the second
// moves nothing and still has them.
func TestOldHomesSpillFilesMoveIntoTheObjectStoreOnce(t *testing.T) {
	srv, _ := eventstest.Start(t)
	home := t.TempDir()
	for name, body := range map[string]string{
		"c1/call_1.txt":             "the whole output",
		"c1/call_2-1.png":           "\x89PNG image",
		"c2/=0a1b.txt":              "a hashed call id",
		"c2/.call_3.txt.tmp-0a1b2c": "cut by a crash",
	} {
		p := filepath.Join(home, "spill", filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	open := func() (*ObjectSpills, string) {
		var logs strings.Builder
		s, err := OpenSpills(t.Context(), srv.Conn(), home, time.Hour, nil, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		return s, logs.String()
	}
	s, logged := open()
	if !strings.Contains(logged, "moved the spilled tool outputs from files") || !strings.Contains(logged, "files=3") {
		t.Errorf("the first open does not say it moved 3 files:\n%s", logged)
	}
	if _, err := os.Stat(filepath.Join(home, "spill")); !os.IsNotExist(err) {
		t.Errorf("spill/ is still there after the move (%v)", err)
	}
	_, logged = open()
	if strings.Contains(logged, "moved") {
		t.Errorf("the second open moved again:\n%s", logged)
	}
	for conv, names := range map[string]map[string]string{
		"c1": {"call_1.txt": "the whole output", "call_2-1.png": "\x89PNG image"},
		"c2": {"=0a1b.txt": "a hashed call id"},
	} {
		for name, want := range names {
			if b, err := s.Get(context.Background(), conv, name); err != nil || string(b) != want {
				t.Errorf("%s/%s after the move = %q, %v; want %q", conv, name, b, err, want)
			}
		}
	}
	if _, err := s.Get(t.Context(), "c2", ".call_3.txt.tmp-0a1b2c"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a crash's temp file was moved in: %v", err)
	}
}
