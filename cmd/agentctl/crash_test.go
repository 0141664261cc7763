//go:build linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/desktoptest"
	"github.com/agentd-dev/agentd/internal/poll"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/runner/session"
	"github.com/agentd-dev/agentd/tools/respserver"
)

const crashToken = "crash-test-token-0123456789abcdef"

// crashScript is a short scripted task: look, click and type "abc" (two
// calls of one response), type "de", done. The X event recorder on the
// guest's screen is its verification: one click, "abcde" typed.
func crashScript() []respserver.Turn {
	return []respserver.Turn{
		respserver.Call(`{"type":"screenshot"}`),
		respserver.Items(respserver.ComputerCall(`{"type":"click","button":"left","x":100,"y":100}`),
			respserver.ComputerCall(`{"type":"type","text":"abc"}`)),
		respserver.Call(`{"type":"type","text":"de"}`),
		respserver.Final("done"),
	}
}

// crashRig is a real agentd on a private Xvfb, recorded, and the real
// agentctl binary.
type crashRig struct {
	t        *testing.T
	agentctl string
	addr     string
	rec      *xrecorder.Recorder
	// state is agentctl's XDG_STATE_HOME, where runs keep their
	// checkpoints.
	state string
}

// newCrashRig starts the rig's agentd with args added.
func newCrashRig(t *testing.T, args ...string) *crashRig {
	prereq.Programs(t, prereq.X, "Xvfb")
	d := desktoptest.Start(t, agentdtest.Binary(t), 640, 400, crashToken, time.Minute, args...) // agentd --browser starts Chromium first
	return &crashRig{t: t, agentctl: agentctlBinary(t), addr: d.Addr, rec: d.Rec, state: t.TempDir()}
}

// command is agentctl run against the rig's guest and the model at url;
// crashAt sets AGENTD_CRASH_AT. Standard input is not a terminal.
func (r *crashRig) command(url, crashAt string, args ...string) *exec.Cmd {
	cmd := exec.Command(r.agentctl, append([]string{"run", "--guest", r.addr, "--view", "640x400"}, args...)...)
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+url, "OPENAI_API_KEY=sk-crash-test", "AGENTD_TOKEN="+crashToken,
		"AGENTD_CRASH_AT="+crashAt, "XDG_STATE_HOME="+r.state)
	return cmd
}

// killed runs agentctl until it kills itself at crashAt and returns the run's
// record folder.
func (r *crashRig) killed(url, crashAt, recordDir string, extra ...string) string {
	t := r.t
	t.Helper()
	args := append([]string{"--max-steps", "6", "--record-dir", recordDir}, extra...)
	out, err := r.command(url, crashAt, append(args, "click and type")...).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("agentctl with %s=%s: %v, want it killed\n%s", session.CrashEnv, crashAt, err, out)
	}
	runs, _ := filepath.Glob(filepath.Join(recordDir, "*"))
	if len(runs) != 1 {
		t.Fatalf("records %v", runs)
	}
	return runs[0]
}

// verify checks what the desktop received: one left click and want typed.
func (r *crashRig) verify(want string) {
	t := r.t
	t.Helper()
	r.rec.Sync(t)
	evs := r.rec.Events()
	clicks := 0
	for _, e := range evs {
		if e.Kind == xrecorder.ButtonPress && e.Button == 1 {
			clicks++
		}
	}
	if got := xrecorder.Typed(evs); clicks != 1 || got != want {
		t.Fatalf("the desktop got %d clicks and %q typed, want 1 click and %q", clicks, got, want)
	}
}

func resumeNote(t *testing.T, run string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(run, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"kind":"resume"`) {
			return line
		}
	}
	t.Fatalf("no resume line in the record:\n%s", data)
	return ""
}

// TestCrashAtEveryBoundary kills agentctl run (SIGKILL, from inside, right
// at the boundary) before a request, after a response, before an action,
// after an action (before its final screenshot), after the final
// screenshot and after a call, and resumes each with the real binary. The
// X event recorder shows every action performed exactly once, except an
// uncertain one reconciled not-done after it had run, which is performed
// again; the model server saw no bad request and the record says where
// the run resumed.
func TestCrashAtEveryBoundary(t *testing.T) {
	r := newCrashRig(t)
	for _, c := range []struct {
		at, reconcile, phase, typed string
	}{
		{"request:2", "", "request", "abcde"},
		{"response:2", "", "response", "abcde"},
		{"before_call:3", "not-done", "before_call", "abcde"}, // before typing "abc": it never ran
		{"action:2", "done", "before_call", "abcde"},          // typed "abc", before its screenshot
		{"action:3", "not-done", "before_call", "abcdede"},    // typed "de": not-done types it again
		{"screenshot:2", "done", "before_call", "abcde"},      // clicked and looked
		{"after_call:3", "", "after_call", "abcde"},
	} {
		t.Run(c.at, func(t *testing.T) {
			r.t = t
			srv, url := respserver.Start(crashScript()...)
			defer srv.Close()
			r.rec.Clear()
			run := r.killed(url, c.at, t.TempDir())
			if c.reconcile != "" {
				out, err := r.command(url, "", "--resume", run).CombinedOutput()
				if err == nil || !strings.Contains(string(out), "--reconcile done or --reconcile not-done (no terminal to ask on)") {
					t.Fatalf("resume of an uncertain action without a terminal: %v\n%s", err, out)
				}
			}
			args := []string{"--resume", run}
			if c.reconcile != "" {
				args = append(args, "--reconcile", c.reconcile)
			}
			if out, err := r.command(url, "", args...).CombinedOutput(); err != nil {
				t.Fatalf("resume: %v\n%s", err, out)
			}
			if err := srv.Err(); err != nil {
				t.Fatal(err)
			}
			r.verify(c.typed)
			note := resumeNote(t, run)
			if !strings.Contains(note, `"phase":"`+c.phase+`"`) || (c.reconcile != "") != strings.Contains(note, `"reconciliation":"`+c.reconcile+`"`) {
				t.Fatalf("resume line %s, want phase %s, reconciliation %q", note, c.phase, c.reconcile)
			}
		})
	}
}

// A torn checkpoint (the newest truncated, as a crash in mid-write would
// leave it) resumes from the previous good one: here the one before the
// click, which is then uncertain. Two processes on one run: the second is
// refused while the first holds it.
func TestCrashTornCheckpointAndTwoProcesses(t *testing.T) {
	r := newCrashRig(t)
	srv, url := respserver.Start(crashScript()...)
	defer srv.Close()
	run := r.killed(url, "after_call:2", t.TempDir()) // the click done
	cps, _ := filepath.Glob(filepath.Join(r.state, "agentd", "runs", filepath.Base(run), "checkpoint-*.json"))
	if len(cps) < 2 {
		t.Fatalf("checkpoints %v", cps)
	}
	newest := cps[len(cps)-1]
	info, err := os.Stat(newest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(newest, info.Size()/2); err != nil {
		t.Fatal(err)
	}
	if out, err := r.command(url, "", "--resume", run, "--reconcile", "done").CombinedOutput(); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	r.verify("abcde")
	if note := resumeNote(t, run); !strings.Contains(note, `"phase":"before_call"`) || !strings.Contains(note, `"reconciliation":"done"`) {
		t.Fatalf("resume line %s, want the checkpoint before the click", note)
	}

	// The model holds its second answer; meanwhile a second agentctl
	// resumes the same run.
	turns := crashScript()
	turns[1].Delay = 10 * time.Minute
	slow, slowURL := respserver.Start(turns...)
	defer slow.Close()
	dir := t.TempDir()
	first := r.command(slowURL, "", "--max-steps", "6", "--record-dir", dir, "click and type")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = first.Process.Kill()
		_ = first.Wait()
	}()
	poll.Until(t, 15*time.Second, "the first agentctl asked for the second answer", func() bool { return slow.Attempts(1) == 1 })
	runs, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(runs) != 1 {
		t.Fatalf("records %v", runs)
	}
	out, err := r.command(slowURL, "", "--resume", runs[0]).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "held by another process") {
		t.Fatalf("a second process on the run: %v\n%s", err, out)
	}
}

// A resume in another --view than the run's is refused before it acts: the
// checkpoint's calls are in the image space the model saw.
func TestCrashResumeOtherView(t *testing.T) {
	r := newCrashRig(t)
	srv, url := respserver.Start(crashScript()...)
	defer srv.Close()
	run := r.killed(url, "response:2", t.TempDir())
	out, err := r.command(url, "", "--resume", run, "--view", "320x200").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the model saw 640x400 screenshots, but the driver's view gives 320x200") {
		t.Fatalf("resume in another view: %v\n%s", err, out)
	}
	r.rec.Sync(t)
	for _, e := range r.rec.Events() {
		if e.Kind == xrecorder.ButtonPress || e.Kind == xrecorder.KeyPress {
			t.Fatalf("the refused resume acted: %+v", e)
		}
	}
}

// A resume without --view goes on in the run's own view, not the default
// one: the model's click lands where it aimed in the run's image space. A
// record from before the start note held the view resumes in the
// checkpoint's image space.
func TestCrashResumeInTheRunsView(t *testing.T) {
	r := newCrashRig(t)
	for _, noted := range []bool{false, true} {
		srv, url := respserver.Start(crashScript()...)
		r.rec.Clear()
		record := r.killed(url, "response:2", t.TempDir(), "--view", "320x200")
		if !noted {
			events := filepath.Join(record, "events.jsonl")
			data, err := os.ReadFile(events)
			if err != nil {
				t.Fatal(err)
			}
			old := strings.Replace(string(data), `,"view":"320x200"`, "", 1)
			if err := os.WriteFile(events, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		resume := exec.Command(r.agentctl, "run", "--guest", r.addr, "--resume", record)
		resume.Env = append(os.Environ(), "OPENAI_BASE_URL="+url, "OPENAI_API_KEY=sk-crash-test", "AGENTD_TOKEN="+crashToken, "XDG_STATE_HOME="+r.state)
		if out, err := resume.CombinedOutput(); err != nil {
			t.Fatalf("resume without --view (view noted: %v): %v\n%s", noted, err, out)
		}
		srv.Close()
		r.verify("abcde")
		for _, e := range r.rec.Events() {
			if e.Kind == xrecorder.ButtonPress && (e.X != 200 || e.Y != 200) {
				t.Fatalf("the model's click at 100,100 of its 320x200 view landed at %d,%d, want 200,200 (view noted: %v)", e.X, e.Y, noted)
			}
		}
		data, err := os.ReadFile(filepath.Join(record, "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if noted && !strings.Contains(string(data), `"view":"320x200"`) {
			t.Fatalf("the start note has no view:\n%s", data)
		}
		if note := resumeNote(t, record); !strings.Contains(note, `"view":"320x200"`) {
			t.Fatalf("the resume line does not say its view: %s", note)
		}
	}
}

// Resume works in every mode the runner supports: a code-mode run and a
// browser-mode run, each killed just after its first call completed, go on
// from their checkpoints with the real binary, in the run's own settings
// (mode, --allow-origin): the model server sees no bad request, the first
// call does not run again, the record says where the run resumed and ends
// well.
func TestCrashResumeCodeAndBrowserModes(t *testing.T) {
	resumeAfterFirstCall := func(t *testing.T, r *crashRig, turns []respserver.Turn, args ...string) string {
		t.Helper()
		srv, url := respserver.Start(turns...)
		defer srv.Close()
		record := r.killed(url, "after_call:1", t.TempDir(), append([]string{"--max-steps", "5"}, args...)...)
		if out, err := r.command(url, "", "--resume", record).CombinedOutput(); err != nil {
			t.Fatalf("resume: %v\n%s", err, out)
		}
		if err := srv.Err(); err != nil {
			t.Fatal(err)
		}
		if note := resumeNote(t, record); !strings.Contains(note, `"phase":"after_call"`) {
			t.Fatalf("resume line %s, want the checkpoint after the first call", note)
		}
		data, err := os.ReadFile(filepath.Join(record, "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), `"ok":true`) {
			t.Fatalf("the resumed run did not end well:\n%s", data)
		}
		return record
	}

	t.Run("code", func(t *testing.T) {
		if err := exec.Command("/usr/bin/python3", "-I", "-c", "import PIL.Image").Run(); err != nil {
			prereq.Missing(t, prereq.X, "code execution needs /usr/bin/python3 with PIL (apt-get install python3 python3-pil): %v", err)
		}
		r := newCrashRig(t, "--code")
		write := func(s string) respserver.Turn {
			return respserver.Items(respserver.FunctionCall("exec_py", `{"code":"pyautogui.write('`+s+`')"}`))
		}
		resumeAfterFirstCall(t, r, []respserver.Turn{write("ab"), write("cd"), respserver.Final("done")}, "--mode", "code")
		r.rec.Sync(t)
		if got := xrecorder.Typed(r.rec.Events()); got != "abcd" {
			t.Fatalf("typed %q, want each call's text once (abcd)", got)
		}
	})

	t.Run("browser", func(t *testing.T) {
		prereq.Programs(t, prereq.X, "chromium")
		args := []string{"--browser"}
		if os.Geteuid() == 0 {
			args = append(args, "--browser-user", "nobody")
		}
		r := newCrashRig(t, args...)
		read := func() respserver.Turn {
			return respserver.Items(respserver.FunctionCall("read_page", `{"filter":"interactive","tab_id":null}`))
		}
		resumeAfterFirstCall(t, r, []respserver.Turn{read(), read(), respserver.Final("done")},
			"--mode", "browser", "--allow-origin", "http://127.0.0.1:9")
	})
}
