// Command crew-desktop is the desktop helper (R-DSK): the one process
// that sees and acts on the owner's X11 screen and reads the accessibility
// tree, for the crew's computer_* tools.
//
// It runs in the owner's graphical session (DISPLAY and the session bus
// set) and serves the Unix socket <home>/desktop/sock: one JSON request
// line per connection, one JSON answer line (package wire). It starts only
// when that folder is the owner's and nobody else can write it, and it
// answers only peers of its own uid. It imports nothing of the server.
//
//	crew-desktop [--home DIR] [--apps A,B]   (default $CREW_HOME, else ~/.my-agent-crew)
//
// The apps it shows and acts on are --apps, else computer_apps of the
// home's agents with computer: "on"; a request naming apps is refused.
//
//	crew-desktop --version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/jezek/xgb"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
)

// version is the helper's release; the protocol's is wire.Version.
const version = "0.1.0"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crew-desktop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	home := fs.String("home", "", "the crew home (default $CREW_HOME, else ~/.my-agent-crew)")
	apps := fs.String("apps", "", "the apps it shows and acts on, comma-separated (default: computer_apps of the home's agents with computer: \"on\", read at each request)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "crew-desktop: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *showVersion {
		fmt.Fprintf(stdout, "crew-desktop %s (protocol %d)\n", version, wire.Version)
		return 0
	}
	dir, err := homeDir(*home)
	if err != nil {
		fmt.Fprintf(stderr, "crew-desktop: %v\n", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	xgb.Logger = stdlog.New(io.Discard, "", 0) // it complains of a missing ~/.Xauthority
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := listen(dir, log)
	if err != nil {
		fmt.Fprintf(stderr, "crew-desktop: %v\n", err)
		return 1
	}
	d, err := openDisplay()
	if err != nil {
		srv.Close()
		fmt.Fprintf(stderr, "crew-desktop: %v\n", err)
		return 1
	}
	h := newHelper(d, allowedApps(dir, *apps))
	defer h.Close()
	log.Info("crew-desktop serving", "socket", srv.path, "display", d.name, "version", version)
	if err := srv.serve(ctx, h); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "crew-desktop: %v\n", err)
		return 1
	}
	return 0
}

// homeDir is the crew home: the flag, else $CREW_HOME, else
// ~/.my-agent-crew.
func homeDir(flagValue string) (string, error) {
	dir := flagValue
	if dir == "" {
		dir = os.Getenv("CREW_HOME")
	}
	if dir == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home folder: %w (give --home)", err)
		}
		dir = filepath.Join(h, ".my-agent-crew")
	}
	return filepath.Abs(dir)
}
