package local

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func platformSupported() error { return nil }

// sysProcAttr puts a child in its own process group and asks the kernel to
// send it SIGTERM when its owner dies. Pdeathsig fires when the thread that
// forked exits; Go only ends threads of goroutines that exit while locked
// to them, which this package never does, so in practice it is the owner
// process dying.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// waitExited blocks until pid has exited, without reaping it.
func waitExited(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

func signalGroup(pgid int, sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }

// procStat is the part of /proc/PID/stat this package reads.
type procStat struct {
	state byte
	pgrp  int
}

func readStat(pid int) (procStat, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 3 {
		return procStat{}, false
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil || len(f[0]) != 1 {
		return procStat{}, false
	}
	return procStat{state: f[0][0], pgrp: pgrp}, true
}

// livePids lists the processes of this machine that are not zombies.
func livePids() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok && st.state != 'Z' && st.state != 'X' {
			pids = append(pids, pid)
		}
	}
	return pids
}

// groupMembers lists the live processes of process group pgid.
func groupMembers(pgid int) []int {
	var out []int
	for _, pid := range livePids() {
		if st, ok := readStat(pid); ok && st.pgrp == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// markedProcesses lists the live processes whose environment carries the
// guest's marker.
func markedProcesses(marker string) []int {
	want := []byte(markerEnv + "=" + marker + "\x00")
	var out []int
	for _, pid := range livePids() {
		env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err == nil && (bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...))) {
			out = append(out, pid)
		}
	}
	return out
}

// killMarked kills every process carrying the marker and returns those
// still alive after a bounded wait.
func killMarked(marker string) []int {
	deadline := time.Now().Add(groupGoneTimeout)
	for {
		left := markedProcesses(marker)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// removeSharedMemory removes the System V shared memory segments that one
// of pids created and nobody has attached: a client killed before it
// marked its MIT-SHM segment for removal leaves it behind otherwise.
func removeSharedMemory(pids []int) error {
	f, err := os.Open("/proc/sysvipc/shm")
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no System V IPC in this kernel
	}
	if err != nil {
		return fmt.Errorf("shared memory: %w", err)
	}
	defer f.Close()
	ours := make(map[int]bool, len(pids))
	for _, p := range pids {
		ours[p] = true
	}
	var errs []error
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		// key shmid perms size cpid lpid nattch ...
		fl := strings.Fields(sc.Text())
		if len(fl) < 7 {
			continue
		}
		id, err1 := strconv.Atoi(fl[1])
		cpid, err2 := strconv.Atoi(fl[4])
		nattch, err3 := strconv.Atoi(fl[6])
		if err1 != nil || err2 != nil || err3 != nil || !ours[cpid] || nattch != 0 {
			continue
		}
		if _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EIDRM) {
			errs = append(errs, fmt.Errorf("remove shared memory segment %d: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// xDir is where every X server keeps its lock files and sockets, whatever
// $TMPDIR says: it is the X11 convention, not a temporary directory.
const xDir = "/tmp"

// removeXFiles removes display n's lock file and socket if the server that
// left them was ours (pid): Xvfb removes both on SIGTERM, not on SIGKILL.
func removeXFiles(n, pid int) error {
	lock := filepath.Join(xDir, fmt.Sprintf(".X%d-lock", n))
	sock := filepath.Join(xDir, ".X11-unix", fmt.Sprintf("X%d", n))
	data, err := os.ReadFile(lock)
	switch {
	case err == nil:
		if owner, _ := strconv.Atoi(strings.TrimSpace(string(data))); owner != pid {
			return nil // another server holds the display now
		}
		if err := os.Remove(lock); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove X lock: %w", err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("read X lock: %w", err)
	}
	// No lock (or ours, now removed). An Xvfb started with -displayfd, as
	// ours and the tests' are, keeps no lock file, so another one may serve
	// display n already, from the moment ours exited: a socket that answers
	// is its, and removing it would cut that desktop off.
	if c, err := net.DialTimeout("unix", sock, time.Second); err == nil {
		c.Close()
		return nil
	}
	if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove X socket: %w", err)
	}
	return nil
}
