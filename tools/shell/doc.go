// Package shell runs one command line under /bin/sh for the shell_run tool:
// in its own process group, with a timeout, and optionally sandboxed.
//
// Lifetime: the command, and everything it started that stayed in its process
// group, is killed with SIGKILL when the timeout passes, when the caller's
// context ends, and also right after the shell itself exits (so a forgotten
// "server &" does not outlive the call or hold the output pipe open). A
// process that leaves the group (setsid) is not followed; its hold on the
// output pipe is cut after a short grace period.
//
// Sandbox (Linux): when Command.Sandbox is set, the child is restricted
// before exec with Landlock (every write-like filesystem right is handled;
// only the Policy's WritePaths, a private temp dir and a few character
// devices such as /dev/null stay writable; reads and exec are unrestricted),
// and without network it runs in a fresh network namespace that holds only
// a loopback interface. Landlock's signal scope (ABI 6+) also keeps the
// command from signalling processes outside its sandbox. The restrictions are
// applied on a dedicated, locked OS thread that starts the child and then
// exits, so the calling process itself is never restricted. If the machine
// cannot provide what a Policy needs, Run refuses with ErrNoSandbox: a
// sandboxed command never runs unsandboxed.
package shell
