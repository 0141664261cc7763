package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentd-dev/agentd/tools/bench/probe"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100
// on every Linux x86-64 and arm64 build (reading it needs sysconf, which
// needs cgo).
const clockTicks = 100

// procSample is what /proc tells about a process at one moment.
type procSample struct {
	rssKiB, hwmKiB int64
	minorFaults    int64
	cpuTicks       int64
}

// measureMemory takes n screenshots in the view the model sees and reads
// agentd's resident set, faults and CPU time around them; the probe counts
// the allocations of the same pipeline.
func (b *sizeBench) measureMemory(ctx context.Context, n int) (Memory, error) {
	m := Memory{Screenshots: n, View: fitViewString}
	pid, err := findAgentd(b.tokenFile)
	if err != nil {
		return m, err
	}
	b.client.SetView(fitView)
	if _, err := b.client.Screenshot(ctx); err != nil { // warm for this view
		return m, err
	}
	before, err := readProc(pid)
	if err != nil {
		return m, err
	}
	for range n {
		if err := b.desk.change(ctx); err != nil { // a new frame each time, as in a run
			return m, err
		}
		if _, err := b.client.Screenshot(ctx); err != nil {
			return m, err
		}
	}
	after, err := readProc(pid)
	if err != nil {
		return m, err
	}
	m.RSSBeforeKiB, m.RSSAfterKiB, m.HWMKiB = before.rssKiB, after.rssKiB, after.hwmKiB
	m.MinorFaultsPerShot = float64(after.minorFaults-before.minorFaults) / float64(n)
	m.CPUMSPerShot = float64(after.cpuTicks-before.cpuTicks) * 1000 / clockTicks / float64(n)
	if b.probe != nil {
		m.PipelineAllocBytes, m.PipelineAllocs, err = b.probe.Allocs(probe.PipelineFit, n)
		if err != nil {
			return m, err
		}
	}
	return m, nil
}

// findAgentd finds the agentd of this guest: the process whose command
// line names its token file, which lives in the guest's private directory.
func findAgentd(tokenFile string) (int, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, err
	}
	for _, dir := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
		for i := 0; i+1 < len(args); i++ {
			if string(args[i]) == "--token-file" && string(args[i+1]) == tokenFile {
				return strconv.Atoi(filepath.Base(dir))
			}
		}
	}
	return 0, fmt.Errorf("agentd memory: no process with --token-file %s", tokenFile)
}

func readProc(pid int) (procSample, error) {
	var s procSample
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return s, fmt.Errorf("agentd memory: %w", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			s.rssKiB = kib
		case "VmHWM":
			s.hwmKiB = kib
		}
	}
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return s, fmt.Errorf("agentd memory: %w", err)
	}
	// Fields after the command name (which may hold spaces, in parentheses):
	// state is field 3, minflt 10, utime 14, stime 15.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("agentd memory: malformed %s/stat", dir)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return s, fmt.Errorf("agentd memory: short %s/stat", dir)
	}
	field := func(n int) int64 { v, _ := strconv.ParseInt(f[n-3], 10, 64); return v }
	s.minorFaults = field(10)
	s.cpuTicks = field(14) + field(15)
	if s.rssKiB == 0 {
		return s, fmt.Errorf("agentd memory: no VmRSS in %s/status", dir)
	}
	return s, nil
}
