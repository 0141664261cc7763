package main

import (
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/prereq"

	"github.com/moby/moby/client"

	"github.com/agentd-dev/agentd/docker"
	"github.com/agentd-dev/agentd/docker/dockertest"
)

// TestGuestDockerUpStatusDown runs the real agentctl binary against the
// engine: up starts a container that outlives the command, a guest's name
// is enough for screenshot, a container killed behind agentctl's back is
// reported and then cleaned up by down.
func TestGuestDockerUpStatusDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// Where Docker is required, a missing image is no reason to stop:
	// up builds it.
	image := docker.DefaultImage
	if prereq.Docker.Required() {
		image = ""
	}
	cli := dockertest.Engine(t, ctx, image)

	dir := t.TempDir()
	bin := agentctlBinary(t)
	rt := filepath.Join(dir, "rt")
	if err := os.Mkdir(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	// From the repository root, up builds a missing image.
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	a := agentctlCmd{t: t, bin: bin, rt: rt, dir: repo}
	name := "t" + strings.ToLower(filepath.Base(dir))
	if len(name) > 32 {
		name = name[:32]
	}
	t.Cleanup(func() { _, _ = a.run("guest", "down", "--name", name) })

	out := a.must("guest", "up", "--backend", "docker", "--name", name, "--size", "800x600")
	if !strings.Contains(out, `is up (docker`) || !strings.Contains(out, "address:    unix:") {
		t.Errorf("up output:\n%s", out)
	}
	st := a.status(name)
	if !st.Running || st.Health != "ok" || st.Backend != "docker" || st.Instance != backend.InstanceName(name) {
		t.Fatalf("status of a running docker guest: %+v", st)
	}
	if out, err := a.run("guest", "up", "--backend", "docker", "--name", name); err == nil || !strings.Contains(out, "already running") {
		t.Errorf("second up of the same name: %v\n%s", err, out)
	}

	shot := filepath.Join(dir, "shot.png")
	a.must("screenshot", "--guest", name, "-o", shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil || img.Bounds().Dx() != 800 || img.Bounds().Dy() != 600 {
		t.Fatalf("screenshot through the guest's name: %v %v", err, img.Bounds())
	}

	// The container dies behind agentctl's back.
	if _, err := cli.ContainerKill(ctx, st.Instance, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	if st := a.status(name); st.Running {
		t.Errorf("status after the container was killed: %+v", st)
	}
	out = a.must("guest", "down", "--name", name)
	if !strings.Contains(out, "was not running; removed its stale state") {
		t.Errorf("down of a killed guest: %s", out)
	}
	if _, err := cli.ContainerInspect(ctx, st.Instance, client.ContainerInspectOptions{}); err == nil {
		t.Errorf("container %s left after down", st.Instance)
	}
	if _, err := os.Stat(strings.TrimPrefix(filepath.Dir(st.Addr), "unix:")); !os.IsNotExist(err) {
		t.Errorf("the guest's state directory is left after down: %v", err)
	}
}
