package shell

import (
	"context"
	"fmt"
)

// Protections lists each protection of shell commands (shell_run, script
// jobs, hooks) by name and whether this machine gives it, each proven by
// running a real command (for crew doctor).
func (s *Sandbox) Protections() []Protection { return s.protections(s.probed()) }

func (s *Sandbox) protections(f facility) []Protection {
	ctx := context.Background()
	try := func(f facility, p *Policy) error {
		out, err := s.run(ctx, Command{Script: "exit 0", Dir: "/", Sandbox: p}, f)
		if err == nil && out.ExitCode != 0 {
			err = fmt.Errorf("exit code %d: %s", out.ExitCode, out.Text)
		}
		return err
	}
	var ps []Protection
	if f.ns == nsNone {
		no := fmt.Sprintf("no (%v): every shell command and hook is refused", f.nsErr)
		ps = append(ps, Protection{"mount namespace", false, no}, Protection{"PID namespace", false, no})
	} else {
		ps = append(ps,
			Protection{"mount namespace", true, fmt.Sprintf("yes, %s: the home is hidden except the agent's own folder and the shared skills/ and .agents/; the host's Unix sockets (X server, D-Bus, /run/user, each one bound) are covered; a minimal /dev", f.ns)},
			Protection{"PID namespace", true, "yes: a fresh /proc; the server's processes and their environment are out of sight; the command dies with the server"})
	}
	ll := Protection{Name: "Landlock"}
	switch {
	case f.abiErr != nil:
		ll.Detail = fmt.Sprintf("no (%v): agents with shell_network: false or shell_write_paths are refused", f.abiErr)
	case f.ns == nsNone:
		ll.Detail = fmt.Sprintf("no (Landlock ABI %d, but it needs the namespaces above): every shell command and hook is refused", f.abi)
	default:
		if err := try(facility{ns: f.ns, abi: f.abi, skip: skipSeccomp}, &Policy{Network: true}); err != nil {
			ll.Detail = fmt.Sprintf("no (ABI %d, but it fails: %v): agents with shell_network: false or shell_write_paths are refused", f.abi, err)
		} else {
			ll.OK = true
			ll.Detail = fmt.Sprintf("yes, ABI %d: sandboxed commands write only under the workspace, shell_write_paths and $TMPDIR", f.abi)
		}
	}
	ps = append(ps, ll)
	netns := Protection{Name: "network namespace"}
	unixBlock := Protection{Name: "Unix-socket block"}
	if f.ns == nsNone {
		no := "no (it needs the namespaces above): every shell command and hook is refused"
		netns.Detail, unixBlock.Detail = no, no
	} else {
		if f.netErr != nil {
			netns.Detail = fmt.Sprintf("no (%v): every shell command, hook, git and MCP server is refused", f.netErr)
		} else if err := try(facility{ns: f.ns, skip: skipLandlock | skipSeccomp}, &Policy{}); err != nil {
			netns.Detail = fmt.Sprintf("no (%v): every shell command and hook is refused", err)
		} else {
			netns.OK = true
			netns.Detail = "yes: every command has a network of its own with its own loopback (no interface, listener or abstract socket of the host); shell_network: false gets nothing else"
		}
		if err := try(facility{ns: f.ns, skip: skipLandlock}, &Policy{}); err != nil {
			unixBlock.Detail = fmt.Sprintf("no (%v): agents with shell_network: false are refused", err)
		} else {
			unixBlock.OK = true
			unixBlock.Detail = "yes, seccomp: with shell_network: false no AF_UNIX socket can be created (no pathname or abstract socket reachable)"
			if f.abi >= 6 {
				unixBlock.Detail += ", and Landlock scopes abstract sockets"
			}
		}
	}
	return append(ps, netns, unixBlock, s.shellNetwork(f))
}

// shellNetwork says what a command with network reaches, proven by
// running one (its proxy's listener handed back from its namespace).
func (s *Sandbox) shellNetwork(f facility) Protection {
	p := Protection{Name: "shell network"}
	if f.ns == nsNone {
		p.Detail = "no (it needs the namespaces above): every shell command and hook is refused"
		return p
	}
	out, err := s.run(context.Background(), Command{Script: "exit 0", Dir: "/"}, facility{ns: f.ns})
	if err == nil && out.ExitCode != 0 {
		err = fmt.Errorf("exit code %d: %s", out.ExitCode, out.Text)
	}
	if err != nil {
		p.Detail = fmt.Sprintf("no (%v): commands with network (shell_network not false) are refused", err)
		return p
	}
	p.OK = true
	p.Detail = fmt.Sprintf("yes: commands with network (shell_network not false) reach only %s, through crew's proxy at %s inside their own network (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY); nothing on the host's loopback or private networks, no cloud metadata", s.Network().Describe(), ProxyAddr)
	return p
}
