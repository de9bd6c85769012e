// Package shell runs one command line under /bin/sh for shell_run, script
// jobs and hooks: isolated from the crew home and the server, with a
// timeout, and optionally sandboxed.
//
// Every command starts through a Sandbox (Sandbox.Run), a value the App
// builds once per home: it holds what the machine offers, the network
// policy and the record of running commands, so two homes in one process
// share none of it. The package keeps no state of its own.
//
// Isolation (every command, Linux): the server re-executes itself as the
// init (pid 1) of new mount, PID and network namespaces — directly as root, else
// inside a user namespace. That init makes mounts private, covers the home
// with an empty read-only tmpfs and puts back only what View lists (see
// HomeView: the agent's own folder and the shared kits), covers the host's
// pathname Unix sockets (sockets_linux.go), replaces /dev with
// a few harmless devices, mounts a fresh /proc (the server's processes and
// their environment are out of sight) and starts the shell in a further
// user and mount namespace, where every one of those mounts is locked: the
// command cannot unmount them, even as root. If the namespaces cannot be
// had, Run refuses with ErrNoIsolation: no command runs unisolated.
//
// Network (network.go): every command has its own network namespace with
// its own loopback. One with network (no Sandbox, or Sandbox.Network)
// reaches the outside only through the crew's proxy, which the caller of
// Run serves on a listener the init opens at ProxyAddr inside the
// namespace and hands back: public addresses only, on the ports and hosts
// of the Sandbox's Network (config.yaml shell_ports, shell_hosts).
//
// Lifetime: when the shell exits, times out or the caller's context ends,
// the init exits or is killed, and the kernel kills everything left in the
// namespace (also what called setsid), so nothing outlives the call or
// holds the output pipe. The init gets SIGKILL when the server dies (a
// parent-death signal, from a start thread kept alive while the command
// runs). After Sandbox.Track, each running command is also recorded in a file;
// Track at the next start kills what a crashed server left.
//
// Sandbox (Command.Sandbox): the shell is restricted before exec with
// Landlock (every write-like filesystem right is handled; only the Policy's
// WritePaths, a private temp dir and a few character devices stay
// writable; reads and exec are unrestricted; from ABI 6 no signal leaves
// the sandbox). Without network (no proxy in its namespace) a seccomp
// filter refuses AF_UNIX sockets, Unix
// datagram socket pairs and io_uring, so no Unix socket outside — pathname
// or abstract — can be reached. If the machine cannot provide what a Policy
// needs, Run refuses with ErrNoSandbox: a sandboxed command never runs
// unsandboxed. Protections lists each protection for crew doctor.
package shell
