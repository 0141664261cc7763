//go:build !linux

package codeexec

import "syscall"

// workerSysProcAttr: agentd runs on Linux only; elsewhere the package builds
// so host programs (agentctl on macOS) may use its constants, and a worker
// gets its own process group without Linux's parent-death signal.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
