package codeexec

import "syscall"

// workerSysProcAttr gives the worker its own process group, so stopping it
// stops what the code started, and kills it with agentd, so it never
// outlives the daemon.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
