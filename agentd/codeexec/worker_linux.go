package codeexec

import "syscall"

// workerSysProcAttr gives the worker's keeper its own process group, and
// SIGTERM when agentd dies: it then kills the worker and everything the
// code started, so none outlives the daemon.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
