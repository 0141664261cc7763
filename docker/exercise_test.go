package docker

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/exercise"
)

// TestExerciseRunsInContainer is 'agentctl exercise --guest docker': the
// scripted model drives Firefox and Mousepad in a container through the
// real SDK and runner, and the results read back out of the container
// match what it typed.
func TestExerciseRunsInContainer(t *testing.T) {
	rep, out := runExercise(t, exercise.RunConfig{})
	if rep.Steps == 0 || rep.Actions == 0 || rep.BeforeAction == 0 {
		t.Errorf("report %+v: want steps, actions and approvals", rep)
	}
	if !strings.Contains(out, "guest up: docker container agentd-guest-") {
		t.Errorf("the output does not say the guest is a container")
	}
	t.Logf("guest up %v, run %v, total %v", rep.GuestUp, rep.RunTime, rep.Total)
}

// runExercise runs the exercise in a fresh container in cfg's mode and
// returns its report and output; an error fails the test.
func runExercise(t *testing.T, cfg exercise.RunConfig) (*exercise.Report, string) {
	t.Helper()
	needImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cfg.Out, cfg.RecordDir, cfg.Backend = &out, t.TempDir(), "docker"
	rep, err := exercise.Run(ctx, cfg)
	t.Logf("exercise output:\n%s", out.String())
	if err != nil {
		t.Fatalf("exercise in a container (code %v, browser %v): %v", cfg.Code, cfg.Browser, err)
	}
	return rep, out.String()
}
