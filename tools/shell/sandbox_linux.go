package shell

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// rulesetAttr is struct landlock_ruleset_attr up to ABI 6 (scoped).
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

func landlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, errno
	}
	return int(v), nil
}

// Write-like rights: with these handled and reads left alone, a command may
// read and execute anything its user can, and write only where a rule allows.
const writeRights = unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
	unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
	unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
	unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
	unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
	unix.LANDLOCK_ACCESS_FS_MAKE_SYM

// devices stay writable in every sandbox: shells redirect to them routinely.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}

// restrict puts the calling thread in a new Landlock domain where only
// writable (and devices) may be written. With ABI 6 the domain may not
// signal processes outside it, and with scopeUnix not connect to abstract
// Unix sockets created outside it.
func restrict(abi int, writable []string, scopeUnix bool) error {
	handled := uint64(writeRights)
	fileRights := uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE)
	if abi >= 2 {
		handled |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		handled |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
		fileRights |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	attr := rulesetAttr{handledFS: handled}
	size := unsafe.Sizeof(attr.handledFS)
	if abi >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_SIGNAL
		if scopeUnix {
			attr.scoped |= unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		}
		size = unsafe.Sizeof(attr)
	}
	rfd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("create ruleset: %w", errno)
	}
	defer unix.Close(int(rfd))

	for _, p := range append(writable, devices...) {
		if err := allow(int(rfd), p, handled, fileRights); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, rfd, 0, 0); errno != 0 {
		return fmt.Errorf("restrict self: %w", errno)
	}
	return nil
}

// allow adds a rule letting path (and, for a directory, everything beneath
// it) be written. A path that does not exist is skipped.
func allow(ruleset int, path string, dirRights, fileRights uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	rights := dirRights
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights = fileRights
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("rule for %s: %w", path, errno)
	}
	return nil
}

// auditArch is the seccomp architecture of this build; other architectures
// (the 32-bit and x32 syscall entries) are refused outright.
var auditArch = map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]

// unixFilter is the seccomp program of a command without network: it may
// not create an AF_UNIX socket (so it can connect to no Unix socket,
// pathname or abstract, and send to none), may create only connected
// stream socket pairs (a datagram pair could send to any socket address),
// and may not use io_uring (which would create sockets past the filter).
// Everything else is allowed.
func unixFilter() ([]bpf.Instruction, error) {
	if auditArch == 0 {
		return nil, fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	const (
		deny  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		allow = unix.SECCOMP_RET_ALLOW
		nr    = 0  // offsetof(struct seccomp_data, nr)
		arch  = 4  // offsetof(arch)
		arg0  = 16 // args[0], low 32 bits (little endian)
		arg1  = 24 // args[1], low 32 bits
	)
	prog := []bpf.Instruction{
		/* 0 */ bpf.LoadAbsolute{Off: arch, Size: 4},
		/* 1 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		/* 2 */ bpf.RetConstant{Val: deny},
		/* 3 */ bpf.LoadAbsolute{Off: nr, Size: 4},
		/* 4 */ bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x40000000, SkipFalse: 1}, // x32
		/* 5 */ bpf.RetConstant{Val: deny},
		/* 6 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_IO_URING_SETUP, SkipFalse: 1},
		/* 7 */ bpf.RetConstant{Val: deny},
		/* 8 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKET, SkipFalse: 4},
		/* 9 */ bpf.LoadAbsolute{Off: arg0, Size: 4},
		/* 10 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipFalse: 1},
		/* 11 */ bpf.RetConstant{Val: deny},
		/* 12 */ bpf.RetConstant{Val: allow},
		/* 13 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKETPAIR, SkipFalse: 6},
		/* 14 */ bpf.LoadAbsolute{Off: arg0, Size: 4},
		/* 15 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipFalse: 4},
		/* 16 */ bpf.LoadAbsolute{Off: arg1, Size: 4},
		/* 17 */ bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0xf}, // SOCK_TYPE_MASK
		/* 18 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_STREAM, SkipTrue: 1},
		/* 19 */ bpf.RetConstant{Val: deny},
		/* 20 */ bpf.RetConstant{Val: allow},
	}
	return prog, nil
}

// blockUnixSockets installs unixFilter on the calling thread (inherited by
// what it executes). no_new_privs must already be set.
func blockUnixSockets() error {
	prog, err := unixFilter()
	if err != nil {
		return err
	}
	return installSeccomp(prog)
}

// installSeccomp assembles prog and installs it on the calling thread
// (inherited by what it executes). no_new_privs must already be set.
func installSeccomp(prog []bpf.Instruction) error {
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	f := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		f[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}
