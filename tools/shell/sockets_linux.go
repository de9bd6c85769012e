package shell

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// A pathname Unix socket is reached through the filesystem, not the
// network: a network namespace of its own does not keep a command from the
// X server's /tmp/.X11-unix/X0, the session bus under /run/user/<uid>, the
// system bus, systemd's private socket (systemctl as root), docker.sock,
// tmux or an ssh-agent. So every command's mount view covers them: the
// directories of socketDirs, and each socket bound on the host when the
// command starts (the server's /proc/net/unix), get an empty read-only
// directory in their place — or, where the directory holds anything else
// or something the command needs, the socket alone is covered by a
// read-only device node that no one can connect to.

// socketDirs are where desktops and system services keep their sockets,
// covered even when nothing listens there yet (an X server or a login
// that comes later).
var socketDirs = []string{
	"/tmp/.X11-unix", "/tmp/.ICE-unix", "/tmp/.XIM-unix", "/tmp/.font-unix",
	"/run/user", "/run/dbus", "/run/systemd", "/run/screen",
}

// hostSockets says what a command's view must cover so that no socket of
// the host is reachable: dirs to cover whole and single socket files to
// plug. keep are paths the command needs (its directory, the home, its
// writable paths, its program): a directory holding one is never covered
// whole; inside a socketDirs entry, everything but the way to it is.
// netUnix is the list of the server's Unix sockets (/proc/self/net/unix).
func hostSockets(keep []string, netUnix string) (dirs, files []string, err error) {
	var keepReal []string
	for _, k := range keep {
		if k == "" || !filepath.IsAbs(k) {
			continue
		}
		k = filepath.Clean(k)
		keepReal = append(keepReal, k)
		if r, err := filepath.EvalSymlinks(k); err == nil && r != k {
			keepReal = append(keepReal, r)
		}
	}
	holdsKeep := func(dir string) bool {
		return slices.ContainsFunc(keepReal, func(k string) bool { return within(dir, k) })
	}
	seen := map[string]bool{}
	for _, d := range socketDirs {
		real, err := filepath.EvalSymlinks(d)
		if err != nil || seen[real] {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			continue
		}
		seen[real] = true
		if !holdsKeep(real) {
			dirs = append(dirs, real)
			continue
		}
		d2, f2 := coverAround(real, holdsKeep, 8)
		dirs, files = append(dirs, d2...), append(files, f2...)
	}
	bound, err := boundSockets(netUnix)
	if err != nil {
		return nil, nil, err
	}
	covered := func(p string) bool {
		return slices.ContainsFunc(dirs, func(d string) bool { return within(d, p) })
	}
	for _, s := range bound {
		dir, err := filepath.EvalSymlinks(filepath.Dir(s))
		if err != nil {
			continue
		}
		s = filepath.Join(dir, filepath.Base(s))
		if fi, err := os.Lstat(s); err != nil || fi.Mode().Type() != fs.ModeSocket || covered(s) || slices.Contains(files, s) {
			continue // gone, replaced, or covered already
		}
		if dir != "/" && !holdsKeep(dir) && onlySockets(dir) {
			dirs = append(dirs, dir)
		} else {
			files = append(files, s)
		}
	}
	// Outermost first, and nothing inside what is covered whole.
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	var outer []string
	for _, d := range dirs {
		if !slices.ContainsFunc(outer, func(o string) bool { return within(o, d) }) {
			outer = append(outer, d)
		}
	}
	files = slices.DeleteFunc(files, func(f string) bool {
		return slices.ContainsFunc(outer, func(o string) bool { return within(o, f) })
	})
	return outer, files, nil
}

// coverAround covers everything in dir but the way to what the command
// needs: each subdirectory not on that way whole, each socket on its own,
// other files left as they are.
func coverAround(dir string, holdsKeep func(string) bool, depth int) (dirs, files []string) {
	entries, err := os.ReadDir(dir)
	if err != nil || depth == 0 {
		return nil, nil
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir() && holdsKeep(p):
			d, f := coverAround(p, holdsKeep, depth-1)
			dirs, files = append(dirs, d...), append(files, f...)
		case e.IsDir():
			dirs = append(dirs, p)
		case e.Type() == fs.ModeSocket:
			files = append(files, p)
		}
	}
	return dirs, files
}

// onlySockets reports whether dir holds sockets and nothing else (an
// ssh-agent's or tmux's directory).
func onlySockets(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return false
	}
	for _, e := range entries {
		if e.Type() != fs.ModeSocket {
			return false
		}
	}
	return true
}

// boundSockets lists the pathname Unix sockets bound in the server's
// network namespace (by any process in it). A socket bound to a relative
// path is listed as such and cannot be found; one bound in another
// network namespace is not listed.
func boundSockets(netUnix string) ([]string, error) {
	f, err := os.Open(netUnix)
	if err != nil {
		return nil, fmt.Errorf("%w: list the host's sockets: %v", ErrNoIsolation, err)
	}
	defer f.Close()
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	sc.Scan() // the header
	for sc.Scan() {
		// Num RefCount Protocol Flags Type St Inode Path
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		p := strings.Join(fields[7:], " ")
		if strings.HasPrefix(p, "/") && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: list the host's sockets: %v", ErrNoIsolation, err)
	}
	return out, nil
}

// hideSockets (stage 1, mounts private) covers dirs with an empty
// read-only directory and plugs each of files with a read-only device
// node (connect(2) to it is refused: it is no socket). What is gone
// since the server looked is skipped.
func hideSockets(dirs, files []string) error {
	for _, d := range dirs {
		err := unix.Mount("crew-hidden", d, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=4k")
		if err == unix.ENOENT || err == unix.ENOTDIR {
			continue
		}
		if err != nil {
			return fmt.Errorf("cover %s: %w", d, err)
		}
	}
	for _, f := range files {
		fd, err := unix.OpenTree(unix.AT_FDCWD, "/dev/null", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			return fmt.Errorf("plug %s: open_tree /dev/null: %w", f, err)
		}
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC | unix.MOUNT_ATTR_NOSUID}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
			unix.Close(fd)
			return fmt.Errorf("plug %s: %w", f, err)
		}
		err = unix.MoveMount(fd, "", unix.AT_FDCWD, f, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(fd)
		if err == unix.ENOENT || err == unix.ENOTDIR {
			continue
		}
		if err != nil {
			return fmt.Errorf("plug %s: %w", f, err)
		}
	}
	return nil
}
