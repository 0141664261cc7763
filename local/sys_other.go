//go:build !linux

package local

import (
	"errors"
	"syscall"
)

// Local guests need Linux: Xvfb, /proc and the process controls below.
// agentctl still builds elsewhere (macOS hosts use the vm backend).
func platformSupported() error {
	return errors.New("local guests run on Linux only: use another --backend on this host")
}

// The functions below are never reached: Up stops at platformSupported.

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
func waitExited(int)                    {}
func signalGroup(int, syscall.Signal)   {}
func groupMembers(int) []int            { return nil }
func markedProcesses(string) []int      { return nil }
func killMarked(string) []int           { return nil }
func removeSharedMemory([]int) error    { return nil }
func removeXFiles(int, int) error       { return nil }
