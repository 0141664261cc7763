package exercise

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/prereq"
)

// TestCodeModeExercise runs the exercise in code mode on a local guest: the
// scripted model's three exec_py calls, the later ones using the first
// one's helper and variables, leave the same record and saved note as the
// native exercise, checked the same way.
func TestCodeModeExercise(t *testing.T) {
	prereq.Programs(t, prereq.X, "Xvfb", "openbox", "firefox-esr", "mousepad")
	prereq.Full(t, "starting Firefox")
	if err := exec.Command("/usr/bin/python3", "-I", "-c", "import PIL.Image").Run(); err != nil {
		prereq.Missing(t, prereq.X, "code mode needs /usr/bin/python3 with PIL (apt-get install python3 python3-pil): %v", err)
	}
	rep, out := runLocal(t, RunConfig{Code: true})
	if rep.Steps != 4 || rep.Actions != 3 || rep.BeforeAction != 3 {
		t.Fatalf("steps %d, code calls %d, approvals %d; want 4, 3, 3\n%s", rep.Steps, rep.Actions, rep.BeforeAction, out.String())
	}
}

// runLocal runs the exercise as cfg says on a local guest of the agentd
// under test, its records in a temporary directory, within three minutes;
// it fails t with the run's output if the run fails.
func runLocal(t *testing.T, cfg RunConfig) (*Report, *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cfg.Out, cfg.RecordDir, cfg.AgentdPath = &out, t.TempDir(), agentdtest.Binary(t)
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return rep, &out
}
