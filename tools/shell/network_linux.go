package shell

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"

	"golang.org/x/net/netutil"
	"golang.org/x/sys/unix"
)

// proxyFD is where stage 1 finds the socket to hand its proxy listener
// back on.
const proxyFD = 4

// maxProxyConns bounds the connections one command holds open through
// its proxy at once; more wait in the listener's backlog.
const maxProxyConns = 64

// proxySocket is the pair a networked command's proxy listener comes back
// on: the caller keeps one end, stage 1 gets the other as proxyFD.
func proxySocket() (mine, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("shell: proxy socket: %w", err)
	}
	// Ours non-blocking, so that reading it waits in the poller and
	// closing it ends the wait.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("shell: proxy socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "crew-proxy"), os.NewFile(uintptr(fds[1]), "crew-proxy"), nil
}

// handProxyListener (stage 1, in the new network namespace with loopback
// up) listens on ProxyAddr and sends the listening socket to the caller
// over proxyFD, keeping no copy: from then on only the caller accepts on
// it, and the command finds the port taken.
func handProxyListener() error {
	ap := netip.MustParseAddrPort(ProxyAddr)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		return fmt.Errorf("bind %s: %w", ProxyAddr, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		return fmt.Errorf("listen %s: %w", ProxyAddr, err)
	}
	if err := unix.Sendmsg(proxyFD, []byte{'L'}, unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("hand the proxy listener over: %w", err)
	}
	return unix.Close(proxyFD)
}

// serveProxy receives a command's proxy listener on sock (from stage 1)
// and serves the proxy of n on it until stop is called; stop closes the
// listener and every connection and tunnel, and returns once they are.
// Refusals are reported to refused.
func serveProxy(sock *os.File, n *netPolicy, refused func(host string, err error)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var srv *http.Server
	stopped := false
	wg.Go(func() {
		defer sock.Close()
		ln, err := receiveListener(sock)
		if err != nil {
			return // stage 1 failed before: it says why on its status pipe
		}
		mu.Lock()
		if stopped {
			mu.Unlock()
			ln.Close()
			return
		}
		srv = &http.Server{
			Handler:           n.proxy(refused),
			ReadHeaderTimeout: 30 * time.Second,
			BaseContext:       func(net.Listener) context.Context { return ctx },
		}
		mu.Unlock()
		srv.Serve(netutil.LimitListener(ln, maxProxyConns))
	})
	return func() {
		mu.Lock()
		stopped = true
		if srv != nil {
			srv.Close()
		}
		mu.Unlock()
		cancel() // the tunnels (hijacked, so not the server's to close)
		sock.Close()
		wg.Wait()
	}
}

// receiveListener reads the listening socket stage 1 sends.
func receiveListener(sock *os.File) (net.Listener, error) {
	raw, err := sock.SyscallConn()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	var n, oobn int
	var rerr error
	err = raw.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("no proxy listener: stage 1 ended first")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("no proxy listener in the message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("no proxy listener in the message: %v", err)
	}
	f := os.NewFile(uintptr(fds[0]), "crew-proxy-listener")
	defer f.Close()
	return net.FileListener(f)
}
