package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
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
	key, err := h.AuditKey(env.redactor(), env.getenv)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w := io.Writer(env.stdout)
	if *out != "" {
		w = &buf // written atomically once complete
	}
	var n int
	err = onStore(ctx, env, dir, h, app.Options{StoreOnly: true, Secrets: env.redactor()}, func(a *app.App) error {
		last, err := a.Log().Last(ctx, events.Conv(conv).Filter())
		if err == nil && last == 0 {
			err = fmt.Errorf("conversation %q has no events in %s", conv, dir)
		}
		if err == nil {
			n, err = events.WriteExport(w, conv, key, a.Log().Read(ctx, events.Conv(conv).Filter(), 0))
		}
		return err
	}, func(c web.Client) (err error) {
		n, err = c.Export(ctx, conv, key, w)
		return err
	})
	if err == nil && *out != "" {
		err = home.WriteFileAtomic(*out, buf.Bytes(), 0o600)
	}
	switch {
	case err != nil:
		return err
	case *out == "":
		fmt.Fprintf(env.stderr, "exported %d events of %s\n", n, conv)
	default:
		fmt.Fprintf(env.stderr, "exported %d events of %s to %s\n", n, conv, *out)
	}
	return nil
}

func runVerify(ctx context.Context, env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "verify")
	keyFile := fs.String("key-file", "", "audit key: a file holding the key alone, or an env file with "+home.AuditKeyVar)
	noKey := fs.Bool("no-key", false, "check integrity only: the hash chain, not who wrote it")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError{2}
	}
	dir, err := homeDir(env, *homeFlag)
	if err != nil {
		dir = "" // no home: checked without its key
	}
	key, why, err := home.VerifyKey(dir, *keyFile, *noKey, env.getenv)
	if err != nil {
		return err
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	v, err := events.VerifyExport(f, key)
	if err != nil {
		fmt.Fprintf(env.stderr, "%s: %v\n", fs.Arg(0), err)
		return exitError{1}
	}
	// Exit codes: 0 only for "intact, written by this home"; 1 for a
	// broken file, or one without keyed hashes checked against a home that
	// has a key (they were stripped, or another writer made it); 3 for
	// "origin not proven" unless --no-key asked for integrity only.
	head := fmt.Sprintf("ok: %d events of conversation %s", v.Events, v.Conversation)
	switch {
	case v.Proven:
		fmt.Fprintf(env.stdout, "%s: intact, written by this home (%s)\n", head, why)
		return nil
	case !v.Keyed && key != nil:
		fmt.Fprintf(env.stderr, "%s: line 1: no keyed hash, but this home has an audit key (%s): its keyed hashes were removed, or this home did not write it\n", fs.Arg(0), why)
		return exitError{1}
	case !v.Keyed:
		fmt.Fprintf(env.stdout, "%s: hash chain intact; origin not proven: the file has no keyed hashes (an export from before keyed chains, or they were removed)\n", head)
	default:
		fmt.Fprintf(env.stdout, "%s: hash chain intact; origin not proven (%s)\n", head, why)
	}
	if *noKey {
		return nil
	}
	return exitError{3}
}
