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
	line, code, toStderr := v.Verdict(fs.Arg(0), why, key != nil, *noKey)
	w := env.stdout
	if toStderr {
		w = env.stderr
	}
	fmt.Fprintln(w, line)
	if code != 0 {
		return exitError{code}
	}
	return nil
}
