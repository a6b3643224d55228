package main

import "syscall"

// childAttr makes the kernel kill a started service if this helper dies, so an
// interrupted benchmark leaves no server behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
