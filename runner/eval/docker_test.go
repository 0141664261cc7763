package eval

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/agentd-dev/agentd/docker"
	"github.com/agentd-dev/agentd/docker/dockertest"
)

// TestDockerParallel runs built-in tasks that fit the guest image in Docker
// guests (the editor, in computer and code mode), two at once and two
// trials each: right solutions pass, every trial in its own container, and
// every container is gone after. (pickup-form fits the image too; Firefox
// in two containers at once outlasts the entrypoint's start timeout on a
// loaded two-core machine, so the test leaves it out.)
func TestDockerParallel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cli := dockertest.Engine(t, ctx, docker.DefaultImage)
	before := guestContainers(t, cli)
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Select([]string{"note-type", "code-note"}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ev")
	rep, err := Run(ctx, s, Options{Guest: "docker", Scripted: true, Parallel: 2, Trials: 2, Out: out})
	// Whatever happened, no container is left.
	defer func() {
		after := guestContainers(t, cli)
		for id := range after {
			if !before[id] {
				t.Errorf("container %s is left after the evaluation", id)
			}
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	rs := rep.Results
	if len(rs) != 4 {
		t.Fatalf("%d results, want 4", len(rs))
	}
	for _, r := range rs {
		if !r.Pass {
			t.Errorf("%s trial %d: error %q, verdicts %+v", r.Task, r.Trial, r.Error, r.Verdicts)
		}
	}
}

// guestContainers lists the guest containers, running or not.
func guestContainers(t *testing.T, cli *client.Client) map[string]bool {
	t.Helper()
	res, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", docker.LabelGuest+"=1")})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, c := range res.Items {
		ids[c.ID] = true
	}
	return ids
}
