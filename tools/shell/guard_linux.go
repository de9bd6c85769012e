package shell

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The port guard keeps a networked command (shell_run, hooks, script
// jobs, background commands) from connecting to the server that started
// it. The web API trusts loopback, so a command that could reach it could
// approve its own pending calls, send messages or change settings; NATS
// and the browser's proxy and DevTools listen on loopback too.
//
// Landlock (ABI 4, Linux 6.7) restricts TCP connect by destination port,
// on every address: the guard's ruleset handles connect and allows every
// port but the guarded ones and the local ephemeral range
// (net.ipv4.ip_local_port_range), where every listener the server opens on
// port 0 lands — the browser's proxy, Chromium's DevTools, a test server.
// The ruleset is built once (GuardPorts) and handed to each command's
// stage 2, which restricts itself with it before exec, and a seccomp
// filter refuses the sockets that would reach a TCP server past Landlock:
// MPTCP (which falls back to TCP and Landlock does not see) and SMC, and
// io_uring. Without Landlock ABI 4 a networked command is refused
// (ErrNoSandbox): with shell_network: false commands run in a network
// namespace of their own and need none of this.

// netGuard is the ruleset every networked command is restricted with.
type netGuard struct {
	ports  []int // guarded explicitly, sorted
	lo, hi int   // the ephemeral range, guarded whole
	rules  *os.File
	err    error // why networked commands are refused
}

var (
	guardMu sync.Mutex
	guard   *netGuard
)

// ipprotoMPTCP is IPPROTO_MPTCP; afSMC is AF_SMC; ruleNetPort is
// LANDLOCK_RULE_NET_PORT.
const (
	ipprotoMPTCP = 262
	afSMC        = 43
	ruleNetPort  = 2
)

// GuardPorts makes every later networked command unable to open a TCP
// connection to ports (the server's HTTP listener, NATS) or to any port of
// the local ephemeral range, on any address. Calls add to the ports
// already guarded. When this machine cannot enforce it (Landlock below
// ABI 4), the guard still stands: networked commands are refused with the
// reason, and the returned error says so.
func GuardPorts(ports ...int) error {
	guardMu.Lock()
	defer guardMu.Unlock()
	var all []int
	if guard != nil {
		all = append(all, guard.ports...)
	}
	for _, p := range ports {
		if p > 0 && p < 1<<16 && !slices.Contains(all, p) {
			all = append(all, p)
		}
	}
	slices.Sort(all)
	g := &netGuard{ports: all}
	g.lo, g.hi = ephemeralRange()
	g.rules, g.err = buildGuard(g)
	// A ruleset handed to running commands stays open: only a new one
	// replaces it.
	guard = g
	return g.err
}

// guarded is the guard in force, nil before GuardPorts.
func guarded() *netGuard {
	guardMu.Lock()
	defer guardMu.Unlock()
	return guard
}

// unguard drops the guard (tests).
func unguard() {
	guardMu.Lock()
	defer guardMu.Unlock()
	guard = nil
}

// describe says what the guard keeps a command from.
func (g *netGuard) describe() string {
	ps := make([]string, len(g.ports))
	for i, p := range g.ports {
		ps[i] = strconv.Itoa(p)
	}
	return fmt.Sprintf("TCP ports %s and %d-%d", strings.Join(ps, ", "), g.lo, g.hi)
}

// ephemeralRange reads net.ipv4.ip_local_port_range; the kernel's default
// when it cannot be read.
func ephemeralRange() (int, int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			lo, err1 := strconv.Atoi(f[0])
			hi, err2 := strconv.Atoi(f[1])
			if err1 == nil && err2 == nil && 0 < lo && lo <= hi && hi < 1<<16 {
				return lo, hi
			}
		}
	}
	return 32768, 60999
}

// netPortAttr is struct landlock_net_port_attr.
type netPortAttr struct {
	allowed uint64
	port    uint64
}

// buildGuard creates the ruleset: TCP connect handled, allowed to every
// port but g's.
func buildGuard(g *netGuard) (*os.File, error) {
	abi, err := landlockABI()
	if err != nil {
		return nil, fmt.Errorf("%w: no Landlock (%v), so a networked command could reach the server's own API on loopback; set shell_network: false", ErrNoSandbox, err)
	}
	if abi < 4 {
		return nil, fmt.Errorf("%w: Landlock ABI %d has no TCP port rules (ABI 4, Linux 6.7, has them), so a networked command could reach the server's own API on loopback; set shell_network: false", ErrNoSandbox, abi)
	}
	attr := rulesetAttr{handledNet: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP}
	size := unsafe.Sizeof(attr.handledFS) + unsafe.Sizeof(attr.handledNet)
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return nil, fmt.Errorf("%w: landlock: create the port ruleset: %v", ErrNoSandbox, errno)
	}
	f := os.NewFile(fd, "crew-port-guard")
	for p := 1; p < 1<<16; p++ {
		if (p >= g.lo && p <= g.hi) || slices.Contains(g.ports, p) {
			continue
		}
		rule := netPortAttr{allowed: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(p)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, ruleNetPort,
			uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			f.Close()
			return nil, fmt.Errorf("%w: landlock: port rule %d: %v", ErrNoSandbox, p, errno)
		}
	}
	return f, nil
}

// guardFD is where stage 1 and stage 2 find the guard's ruleset.
const guardFD = 4

// restrictPorts puts the calling thread under the guard's ruleset (fd
// guardFD) and closes it, then installs the socket filter. no_new_privs
// must already be set.
func restrictPorts() error {
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, guardFD, 0, 0); errno != 0 {
		return fmt.Errorf("port guard: restrict self: %w", errno)
	}
	unix.Close(guardFD)
	prog, err := netFilter()
	if err != nil {
		return err
	}
	if err := installSeccomp(prog); err != nil {
		return fmt.Errorf("port guard: %w", err)
	}
	return nil
}

// netFilter is the seccomp program of a guarded networked command: no
// MPTCP socket (it falls back to plain TCP past Landlock's port rules; the
// error is the one a kernel without MPTCP gives, so programs fall back to
// TCP), no SMC socket (likewise), no io_uring, no TCP Fast Open send
// (MSG_FASTOPEN connects without connect(2)). Everything else is allowed.
func netFilter() ([]bpf.Instruction, error) {
	if auditArch == 0 {
		return nil, fmt.Errorf("no seccomp filter for this architecture")
	}
	const (
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		noProt = unix.SECCOMP_RET_ERRNO | uint32(unix.EPROTONOSUPPORT)
		noFam  = unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT)
		allow  = unix.SECCOMP_RET_ALLOW
		nr     = 0
		arch   = 4
		arg0   = 16
		arg2   = 32
		arg3   = 40
		noTFO  = unix.SECCOMP_RET_ERRNO | uint32(unix.EOPNOTSUPP)
	)
	prog := []bpf.Instruction{
		/* 0 */ bpf.LoadAbsolute{Off: arch, Size: 4},
		/* 1 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		/* 2 */ bpf.RetConstant{Val: eperm},
		/* 3 */ bpf.LoadAbsolute{Off: nr, Size: 4},
		/* 4 */ bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x40000000, SkipFalse: 1}, // x32
		/* 5 */ bpf.RetConstant{Val: eperm},
		/* 6 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_IO_URING_SETUP, SkipFalse: 1},
		/* 7 */ bpf.RetConstant{Val: eperm},
		/* 8 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKET, SkipFalse: 7},
		/* 9 */ bpf.LoadAbsolute{Off: arg0, Size: 4},
		/* 10 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: afSMC, SkipFalse: 1},
		/* 11 */ bpf.RetConstant{Val: noFam},
		/* 12 */ bpf.LoadAbsolute{Off: arg2, Size: 4},
		/* 13 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: ipprotoMPTCP, SkipFalse: 1},
		/* 14 */ bpf.RetConstant{Val: noProt},
		/* 15 */ bpf.RetConstant{Val: allow},
		// TCP Fast Open connects inside sendto/sendmsg(MSG_FASTOPEN), where
		// Landlock's connect rule never looks: refused, as a kernel without
		// client TFO would (programs fall back to connect).
		/* 16 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SENDMSG, SkipTrue: 3},
		/* 17 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SENDTO, SkipTrue: 4},
		/* 18 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SENDMMSG, SkipTrue: 3},
		/* 19 */ bpf.RetConstant{Val: allow},
		/* 20 */ bpf.LoadAbsolute{Off: arg2, Size: 4}, // sendmsg's flags
		/* 21 */ bpf.Jump{Skip: 1},
		/* 22 */ bpf.LoadAbsolute{Off: arg3, Size: 4}, // sendto's and sendmmsg's flags
		/* 23 */ bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.MSG_FASTOPEN, SkipFalse: 1},
		/* 24 */ bpf.RetConstant{Val: noTFO},
		/* 25 */ bpf.RetConstant{Val: allow},
	}
	return prog, nil
}
