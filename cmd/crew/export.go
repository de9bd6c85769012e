package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/my-agent-crew/crew/cmd/crew/home"
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
	dir, h, err := openHome(env, *homeFlag)
	if err != nil {
		return err
	}
	write := func(w io.Writer) (int, error) {
		s, err := openStore(ctx, dir, h.Config, slog.New(slog.DiscardHandler))
		if errors.Is(err, errStoreBusy) {
			return exportFromServer(ctx, dir, serverToken(env, h), conv, w)
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

// exportFromServer asks the running server, which holds the store, and
// verifies what arrives while copying it, so the count is the same either way.
func exportFromServer(ctx context.Context, dir, token, conv string, w io.Writer) (int, error) {
	info, err := readServeInfo(dir)
	if err != nil {
		return 0, err
	}
	var n int
	err = getFromServer(ctx, info.URL+"/api/conversations/"+conv+"/export", token, func(body io.Reader) error {
		pr, pw := io.Pipe()
		done := make(chan struct{})
		var verr error
		go func() {
			defer close(done)
			_, n, verr = events.VerifyExport(pr)
			io.Copy(io.Discard, pr)
		}()
		_, err := io.Copy(io.MultiWriter(w, pw), body)
		pw.CloseWithError(err)
		<-done
		if err != nil {
			return err
		}
		if verr != nil {
			return fmt.Errorf("the export arrived broken: %w", verr)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("export from running server: %w", err)
	}
	return n, nil
}

// serverToken is the auth token to send to a running server, found where
// serve finds it.
func serverToken(env *cliEnv, h *home.Home) string {
	if h.Config.AuthToken != "" {
		return h.Config.AuthToken
	}
	return h.Getenv("CREW_AUTH_TOKEN", env.getenv)
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
