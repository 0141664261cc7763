//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/prereq"
)

// TestEvalNeedsAKeyOrScript: a real-model evaluation without
// OPENAI_API_KEY stops with a clear error before any guest starts (its
// output folder is never made).
func TestEvalNeedsAKeyOrScript(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ev")
	cmd := exec.Command(agentctlBinary(t), "eval", "builtin", "--model", "gpt-test", "--out", out)
	cmd.Env = withoutKey(os.Environ())
	msg, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "OPENAI_API_KEY") || !strings.Contains(string(msg), "--scripted") {
		t.Fatalf("err %v, output %s: want a failure naming OPENAI_API_KEY and --scripted", err, msg)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the output folder exists (%v): something started", err)
	}
}

func withoutKey(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "OPENAI_API_KEY=") {
			out = append(out, e)
		}
	}
	return out
}

// TestEvalResumeAfterSIGKILL kills agentctl eval mid-suite and resumes it:
// every trial has exactly one result, the results written before the kill
// are kept as they were (their trials never ran again), and every trial
// passes — each task's edit, typed once and saved once, is checked byte
// for byte, so an effect performed twice in the counted guest fails it.
func TestEvalResumeAfterSIGKILL(t *testing.T) {
	prereq.Programs(t, prereq.X, "Xvfb", "openbox", "mousepad", "xprop")
	agentd := agentdtest.Binary(t)
	agentctl := agentctlBinary(t)
	out := filepath.Join(t.TempDir(), "ev")
	tasks := []string{"note-type", "append-line", "fix-typo"}
	cmd := exec.Command(agentctl, "eval", "builtin", "--scripted", "--tasks", strings.Join(tasks, ","), "--out", out, "--agentd", agentd)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(out, "results.jsonl")
	deadline := time.Now().Add(3 * time.Minute)
	for countLines(t, results) < 1 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no result within 3 minutes:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	before, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(before, []byte("\n")); n >= len(tasks) {
		t.Fatalf("%d results before the kill: the suite had ended, nothing to resume", n)
	}
	firstRecord := recordStamp(t, out, before)

	resume := exec.Command(agentctl, "eval", "--resume", out, "--agentd", agentd)
	msg, err := resume.CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, msg)
	}
	after, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(after, before) {
		t.Errorf("the results written before the kill changed")
	}
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(after))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r struct {
			Task  string `json:"task"`
			Trial int    `json:"trial"`
			Pass  bool   `json:"pass"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		seen[r.Task]++
		if !r.Pass {
			t.Errorf("%s trial %d failed (%s): an effect performed twice or lost?", r.Task, r.Trial, r.Error)
		}
	}
	for _, id := range tasks {
		if seen[id] != 1 {
			t.Errorf("task %s has %d results, want exactly 1", id, seen[id])
		}
	}
	if again := recordStamp(t, out, before); again != firstRecord {
		t.Errorf("the run record of a trial finished before the kill changed: %s, then %s", firstRecord, again)
	}
	if !strings.Contains(string(msg), "overall") {
		t.Errorf("the resume printed no summary:\n%s", msg)
	}
}

// recordStamp is the size and time of the run record of the first result.
func recordStamp(t *testing.T, out string, results []byte) string {
	t.Helper()
	var r struct {
		Record string `json:"record"`
	}
	line, _, _ := bytes.Cut(results, []byte("\n"))
	if err := json.Unmarshal(line, &r); err != nil || r.Record == "" {
		t.Fatalf("first result %s: %v", line, err)
	}
	st, err := os.Stat(filepath.Join(out, r.Record, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s %d bytes", st.ModTime(), st.Size())
}

func countLines(t *testing.T, file string) int {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}
