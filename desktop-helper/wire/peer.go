package wire

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// CheckPeer refuses the other end of c unless it runs as the current uid
// (SO_PEERCRED: the kernel's word, not the peer's).
func CheckPeer(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("peer credentials: %w", serr)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("%w: peer uid %d (pid %d) is not uid %d", ErrUnsafe, cred.Uid, cred.Pid, os.Getuid())
	}
	return nil
}
