//go:build !linux

package main

import "syscall"

// childSysProcAttr is nil off Linux: there is no parent-death signal, and the
// soak's deferred stop is the only guard.
func childSysProcAttr() *syscall.SysProcAttr { return nil }

// slowReadControl leaves the buffer alone off Linux: slow readers keep the
// default window, so the server's writes block later.
func slowReadControl(_, _ string, _ syscall.RawConn) error { return nil }
