package docker

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// TestContainerKilledMidRun kills the container while the runner is in the
// middle of a computer call: the run stops with an error that says which
// call was attempted and that it did not complete, and Down still removes
// everything.
func TestContainerKilledMidRun(t *testing.T) {
	cli := needImage(t)
	g := upGuest(t, Config{Size: "800x600"})
	c := agentdtest.Dial(t, g.Addr, token(t, g))

	model, base := respserver.Start(
		respserver.Call(`{"type":"screenshot"}`),
		respserver.Call(
			`{"type":"move","x":10,"y":10}`,
			`{"type":"move","x":20,"y":20}`,
			`{"type":"move","x":30,"y":30}`,
		),
		respserver.Final("unreachable"),
	)
	defer model.Close()
	ts := runner.New(respserver.Client(base), c)
	defer ts.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var killed bool
	var calls []string // in order of their first action
	_, err := ts.Run(ctx, runner.RunOptions{
		Model: "test", Input: "move around",
	}, runner.CallOptions{
		// The first move of the second call has run when the second is
		// about to: the container dies between them.
		BeforeAction: func(ctx context.Context, a runner.ActionInfo) (any, error) {
			if !slices.Contains(calls, a.CallID) {
				calls = append(calls, a.CallID)
			}
			if a.Action.Type == "move" && a.Index == 1 && !killed {
				killed = true
				if _, err := cli.ContainerKill(ctx, g.ID, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
					return nil, err
				}
			}
			return true, nil
		},
	})
	if !killed {
		t.Fatalf("the run never reached the second call: %v", err)
	}
	var re *runner.RunError
	if !errors.As(err, &re) {
		t.Fatalf("run error %T %v: want a *runner.RunError", err, err)
	}
	first, second := calls[0], calls[1]
	if !slices.Equal(re.AttemptedCallIDs, []string{first, second}) || !slices.Equal(re.CompletedCallIDs, []string{first}) {
		t.Errorf("attempted %v, completed %v: want both attempted and only the first (%s) completed", re.AttemptedCallIDs, re.CompletedCallIDs, first)
	}
	if msg := err.Error(); !strings.Contains(msg, "attempted calls: "+first+", "+second) || !strings.Contains(msg, "completed calls: "+first+")") {
		t.Errorf("error %q does not say which calls ran", msg)
	}
	t.Logf("the user sees: %v", err)

	st, serr := g.Status(context.Background())
	if serr != nil || st.Running {
		t.Fatalf("status after the kill: %+v, %v", st, serr)
	}
	if err := g.Down(context.Background()); err != nil {
		t.Fatalf("Down after the kill: %v", err)
	}
	assertGone(t, cli, g)
}

// TestOpenFindsARunningGuest: another process (agentctl guest down) finds a
// guest by name and stops it; a container without the guest label is not
// taken for one.
func TestOpenFindsARunningGuest(t *testing.T) {
	cli := needImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := upGuest(t, Config{Size: "640x480"})

	o, err := Open(ctx, g.Name, "")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if o.ID != g.ID || o.Addr != g.Addr || o.TokenFile != g.TokenFile || o.Home != g.Home || o.Width != 640 || o.Height != 480 {
		t.Fatalf("Open found %+v, Up made %+v", o, g)
	}
	screenshot(t, agentdtest.Dial(t, o.Addr, token(t, o)), 640, 480)
	if _, err := o.ReadFile(ctx, "/etc/debian_version"); err != nil {
		t.Errorf("ReadFile through the opened guest: %v", err)
	}
	if err := o.Down(ctx); err != nil {
		t.Fatalf("Down of the opened guest: %v", err)
	}
	assertGone(t, cli, g)

	if _, err := Open(ctx, g.Name, ""); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a removed guest: %v, want fs.ErrNotExist", err)
	}
	if _, err := Open(ctx, "../x", ""); err == nil {
		t.Error("Open accepted a bad name")
	}
	// A container of someone else's, without the label.
	img, err := cli.ImageInspect(ctx, testImage)
	if err != nil {
		t.Fatal(err)
	}
	name := "agentd-test-unlabelled-" + g.Name
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name, Config: &container.Config{Image: img.ID}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true})
	if _, err := Open(ctx, name, ""); err == nil || !strings.Contains(err.Error(), "not started by agentd") {
		t.Errorf("Open of an unlabelled container: %v", err)
	}
}
