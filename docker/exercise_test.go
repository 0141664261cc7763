package docker

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/tools/exercise"
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

// TestExerciseTakesPooledGuest is 'agentctl exercise --guest docker' with
// 'agentctl guest pool --apps exercise' running: the exercise takes the
// pooled guest instead of starting one, passes on it, and takes it down
// afterwards (a pooled guest serves one run).
func TestExerciseTakesPooledGuest(t *testing.T) {
	cli := needImage(t)
	rt, err := os.MkdirTemp("", "agx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	t.Setenv("XDG_RUNTIME_DIR", rt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := backend.Get("docker")
	if err != nil {
		t.Fatal(err)
	}
	spec := exercise.Spec(exercise.RunConfig{})
	spec.Name = backend.PoolName()
	inst, err := backend.Up(ctx, b, spec)
	if err != nil {
		t.Fatal(err)
	}
	inst.Close()
	t.Cleanup(func() { _, _ = backend.Down(context.Background(), spec.Name, false) })
	if err := backend.MarkPooled(spec.Name, backend.KeyOf("docker", exercise.Spec(exercise.RunConfig{}))); err != nil {
		t.Fatal(err)
	}

	rep, out := runExercise(t, exercise.RunConfig{})
	if rep.Pooled != spec.Name || !strings.Contains(out, "took the pooled docker guest "+spec.Name) {
		t.Errorf("the exercise did not take the pooled guest %s (took %q)", spec.Name, rep.Pooled)
	}
	if strings.Contains(out, "starting the exercise desktop") {
		t.Error("the exercise started a guest of its own beside the pooled one")
	}
	if _, err := backend.Record(spec.Name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the pooled guest's record after the run: %v; want it gone", err)
	}
	if _, err := cli.ContainerInspect(ctx, backend.InstanceName(spec.Name), client.ContainerInspectOptions{}); err == nil {
		t.Errorf("the pooled guest's container is left after the run")
	}
}
