//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/docker"
	"github.com/agentd-dev/agentd/docker/dockertest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
)

// TestMCPDockerFreshGuest: agentctl mcp --guest docker gives the MCP
// session a fresh container: it runs while the session drives it (a
// screenshot of the view's size) and is gone once the client closes the
// session.
func TestMCPDockerFreshGuest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cli := dockertest.Engine(t, ctx, docker.DefaultImage)

	cmd := exec.Command(agentctlBinary(t), "mcp", "--guest", "docker", "--record-dir", t.TempDir())
	// A runtime directory of its own: no guest pool of this machine is used.
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())
	stderr := &agentdtest.SyncBuffer{}
	cmd.Stderr = stderr
	// Closing the session waits for agentctl to take its guest down and
	// exit, bounded by the test's context rather than the SDK's 5 s before
	// SIGTERM (and SIGKILL 5 s later): a container's stop under load takes
	// longer, and a killed agentctl cannot take it down.
	deadline, _ := ctx.Deadline()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agentd-test", Version: "v0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Until(deadline)}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	defer func() {
		if t.Failed() {
			t.Logf("agentctl mcp:\n%s", stderr.String())
		}
	}()

	screenshotOf(t, call(t, ctx, cs, `[{"type":"screenshot"}]`), 1280, 800)
	m := regexp.MustCompile(`connected to docker guest (\S+)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatal("agentctl mcp did not name the session's container")
	}
	container := m[1]
	c, err := cli.ContainerInspect(ctx, container, client.ContainerInspectOptions{})
	if err != nil || c.Container.State == nil || !c.Container.State.Running {
		t.Fatalf("the session's container %s during the session: %+v %v", container, c, err)
	}
	screenshotOf(t, call(t, ctx, cs, `[{"type":"click","x":640,"y":400}]`), 1280, 800)

	closed := time.Now()
	if err := cs.Close(); err != nil {
		t.Errorf("agentctl mcp did not exit cleanly after the client closed: %v", err)
	}
	t.Logf("agentctl mcp took its guest down and exited %s after the client closed", time.Since(closed).Round(time.Millisecond))
	// agentctl has exited: its guest's take down is over, and the
	// container must be gone now, not later.
	if _, err := cli.ContainerInspect(ctx, container, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Fatalf("container %s is left after agentctl mcp exited (inspect: %v)", container, err)
	}
}
