package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/my-agent-crew/crew/events"
)

func runExport(ctx context.Context, env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "export")
	out := fs.String("o", "", "write to FILE instead of stdout (written atomically)")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError{2}
	}
	conv := fs.Arg(0)
	if err := events.ValidID(conv); err != nil {
		return err
	}
	dir, err := homeDir(env, *homeFlag)
	if err != nil {
		return err
	}
	h, err := loadHome(env, dir)
	if err != nil {
		return err
	}
	write := func(w io.Writer) (int, error) {
		s, err := openStore(ctx, dir, h.Config, slog.New(slog.DiscardHandler))
		if errors.Is(err, errStoreBusy) {
			return exportFromServer(ctx, dir, conv, w)
		}
		if err != nil {
			return 0, err
		}
		defer s.Close()
		last, err := s.log.Last(ctx, events.Conv(conv).Filter())
		if err != nil {
			return 0, err
		}
		if last == 0 {
			return 0, fmt.Errorf("conversation %q has no events in %s", conv, dir)
		}
		return events.WriteExport(w, conv, s.log.Read(ctx, events.Conv(conv).Filter(), 0))
	}
	if *out == "" {
		n, err := write(env.stdout)
		if err == nil {
			fmt.Fprintf(env.stderr, "exported %d events of %s\n", n, conv)
		}
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(*out), "."+filepath.Base(*out)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	n, err := write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), *out); err != nil {
		return err
	}
	fmt.Fprintf(env.stderr, "exported %d events of %s to %s\n", n, conv, *out)
	return nil
}

// exportFromServer asks the running server, which holds the store.
func exportFromServer(ctx context.Context, dir, conv string, w io.Writer) (int, error) {
	info, err := readServeInfo(dir)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, info.URL+"/api/conversations/"+conv+"/export", nil)
	if err != nil {
		return 0, err
	}
	if tok := os.Getenv("CREW_AUTH_TOKEN"); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("export from running server %s: %w", info.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("export from running server %s: %s: %s", info.URL, resp.Status, body)
	}
	// Count while copying, so the summary is the same either way.
	pr, pw := io.Pipe()
	done := make(chan struct{})
	var n int
	var verr error
	go func() {
		defer close(done)
		_, n, verr = events.VerifyExport(pr)
		io.Copy(io.Discard, pr)
	}()
	_, err = io.Copy(io.MultiWriter(w, pw), resp.Body)
	pw.CloseWithError(err)
	<-done
	if err != nil {
		return 0, fmt.Errorf("export from running server: %w", err)
	}
	if verr != nil {
		return 0, fmt.Errorf("export from running server arrived broken: %w", verr)
	}
	return n, nil
}

func runVerify(ctx context.Context, env *cliEnv, args []string) error {
	fs, _ := newFlags(env, "verify")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError{2}
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	conv, n, err := events.VerifyExport(f)
	if err != nil {
		fmt.Fprintf(env.stderr, "%s: %v\n", fs.Arg(0), err)
		return exitError{1}
	}
	fmt.Fprintf(env.stdout, "ok: %d events of conversation %s, hash chain intact\n", n, conv)
	return nil
}
