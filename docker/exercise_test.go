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
	needImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := exercise.Run(ctx, exercise.RunConfig{Out: &out, RecordDir: t.TempDir(), Backend: "docker"})
	t.Logf("exercise output:\n%s", out.String())
	if err != nil {
		t.Fatalf("exercise in a container: %v", err)
	}
	if rep.Steps == 0 || rep.Actions == 0 || rep.BeforeAction == 0 {
		t.Errorf("report %+v: want steps, actions and approvals", rep)
	}
	if !strings.Contains(out.String(), "guest up: docker container agentd-guest-") {
		t.Errorf("the output does not say the guest is a container")
	}
	t.Logf("guest up %v, run %v, total %v", rep.GuestUp, rep.RunTime, rep.Total)
}
