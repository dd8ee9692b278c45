//go:build linux

package main

import (
	"fmt"
	"syscall"
)

// childSysProcAttr has the kernel kill the child if the soak dies without
// stopping it (SIGKILL, a crash): a soak must never leave a server behind.
// The child gets its own process group, so a terminal's Ctrl-C reaches only
// the soak, which then stops the child itself rather than seeing it drain
// on its own and calling that a crash.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// slowReadControl shrinks a slow reader's receive buffer before it connects,
// so the window it advertises is small and the server's writes block.
func slowReadControl(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, slowReadBuffer)
	}); err != nil {
		return fmt.Errorf("slow reader: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("slow reader: SO_RCVBUF: %w", serr)
	}
	return nil
}
