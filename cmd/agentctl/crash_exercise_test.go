//go:build linux

package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/runner/session"
	"github.com/agentd-dev/agentd/tools/exercise"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// exerciseComputerScript is the exercise's script as `agentctl run` can
// follow it: the first turn only looks (agentctl run declares no
// lookup_pickup; the values it would return are the script's constants),
// and the submit call carries no safety check (agentctl run refuses one
// without a terminal).
func exerciseComputerScript(t *testing.T) []respserver.Turn {
	turns, err := exercise.Script()
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 5 || len(turns[0].Items) != 2 || len(turns[2].SafetyChecks) != 1 {
		t.Fatalf("the exercise script changed shape: %+v", turns)
	}
	turns[0] = respserver.Call(`{"type":"screenshot"}`)
	turns[2].SafetyChecks = nil
	return turns
}

// TestCrashExercise kills `agentctl run` (SIGKILL, at a boundary) while it
// drives the exercise's desktop (Firefox with the form, Mousepad), resumes
// the run with the real binary and checks the desktop with the exercise's
// own verification: exactly one booking with the right values and the
// note saved byte for byte, so a submission or typing done twice fails it.
// Each case has a fresh guest: the form's records and the editor cannot be
// reset in place.
func TestCrashExercise(t *testing.T) {
	prereq.Programs(t, prereq.X, "Xvfb", "openbox", "firefox-esr", "mousepad")
	prereq.Full(t, "starting Firefox per case")
	agentd, agentctl := agentdtest.Binary(t), agentctlBinary(t)
	b, err := backend.Get("local")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, at, reconcile, phase string
	}{
		// The form-filling response is on disk; none of its actions ran.
		// The resumed process acts first, in a new agentd session: its
		// clicks land only if it set the view before (lookBeforeResume).
		{"after a response", "response:2", "", "response"},
		// The first call answered; the resumed run asks for the form.
		{"after a call", "after_call:1", "", "after_call"},
		// The submit click and its wait ran, the call's screenshot was not
		// taken: uncertain, reconciled done, so not submitted again.
		{"submit uncertain", "action:8", "done", "before_call"},
		// Killed before the submit call: it never ran, and not-done runs it.
		{"before the submit", "before_call:3", "not-done", "before_call"},
		// The note typed and saved, the call's screenshot not taken:
		// reconciled done, so not typed again.
		{"note uncertain", "action:13", "done", "before_call"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			g, err := b.Up(ctx, exercise.Spec(exercise.RunConfig{AgentdPath: agentd}))
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := g.Down(context.WithoutCancel(ctx)); err != nil {
					t.Errorf("guest down: %v", err)
				}
			}()
			d := g.Describe()
			srv, url := respserver.Start(exerciseComputerScript(t)...)
			defer srv.Close()
			// The rig's command with the guest's token file and the
			// exercise's view (later flags win).
			rig := &crashRig{t: t, agentctl: agentctl, addr: d.Addr, state: t.TempDir()}
			run := func(crashAt string, args ...string) ([]byte, error) {
				return rig.command(url, crashAt, append([]string{"--token-file", d.TokenFile, "--view", "1280x800"}, args...)...).CombinedOutput()
			}
			records := t.TempDir()
			out, err := run(c.at, "--max-steps", "6", "--record-dir", records, crashExerciseTask)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("agentctl with %s=%s: %v, want it killed\n%s", session.CrashEnv, c.at, err, out)
			}
			runs, _ := filepath.Glob(filepath.Join(records, "*"))
			if len(runs) != 1 {
				t.Fatalf("records %v", runs)
			}
			args := []string{"--resume", runs[0]}
			if c.reconcile != "" {
				args = append(args, "--reconcile", c.reconcile)
			}
			if out, err := run("", args...); err != nil {
				t.Fatalf("resume: %v\n%s", err, out)
			}
			if err := srv.Err(); err != nil {
				t.Fatal(err)
			}
			files, ok := g.(backend.FileReader)
			if !ok {
				t.Fatal("a local guest cannot read its files back")
			}
			if err := exercise.Verify(ctx, files); err != nil {
				t.Fatal(err)
			}
			note := resumeNote(t, runs[0])
			if !strings.Contains(note, `"phase":"`+c.phase+`"`) || (c.reconcile != "") != strings.Contains(note, `"reconciliation":"`+c.reconcile+`"`) {
				t.Fatalf("resume line %s, want phase %s, reconciliation %q", note, c.phase, c.reconcile)
			}
		})
	}
}

// crashExerciseTask is the exercise's task without the lookup.
const crashExerciseTask = "Book the pickup in the form (name " + exercise.PickupName + ", date " + exercise.PickupDate + ", slot " +
	exercise.PickupSlot + ", fragile) and submit it, then type this note in the editor exactly as given and save it with Ctrl+S:\n" + exercise.NoteText
