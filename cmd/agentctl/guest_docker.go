package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/agentd-dev/agentd/docker"
	"github.com/agentd-dev/agentd/exercise"
)

// A Docker guest needs no supervisor: the container outlives agentctl. Its
// guest.json names the container ("agentd-" and the guest's name); the
// engine says whether it runs.

// instanceName names a guest's container or VM.
func instanceName(guestName string) string { return "agentd-" + guestName }

// dockerBuild builds the guest image when it is missing, from the
// repository agentctl runs in; elsewhere a missing image is an error that
// says how to build it.
func dockerBuild() *docker.BuildOptions {
	if _, err := os.Stat(docker.DefaultDockerfile); err != nil {
		return nil
	}
	return &docker.BuildOptions{Context: "."}
}

// guestProgress prints an image build's or a VM's start steps as they
// come: a first start takes minutes.
func guestProgress(w io.Writer) func(string) {
	return func(line string) { fmt.Fprintf(w, "  %s\n", line) }
}

// dockerUp starts a named Docker guest for 'guest up' and records it in dir.
func dockerUp(ctx context.Context, o upOptions, dir string) (guestState, error) {
	return upRemote(ctx, o, dir, func(ctx context.Context, spec exercise.RemoteSpec) (*startedGuest, error) {
		g, err := docker.Up(ctx, docker.Config{
			Name:      instanceName(o.name),
			Size:      o.size,
			Network:   o.network,
			Build:     dockerBuild(),
			Apps:      spec.Apps,
			URL:       spec.URL,
			File:      spec.File,
			ConfigDir: spec.ConfigDir,
		}, guestProgress(os.Stdout))
		if err != nil {
			return nil, err
		}
		s := &startedGuest{remote: g.Remote(), home: g.Home, addr: g.Addr, where: "container", close: func() { g.Close() }}
		if g.TCPAddr != "" {
			s.addr = g.TCPAddr
		}
		return s, nil
	})
}

// dockerDown stops and removes a Docker guest's container.
func dockerDown(ctx context.Context, st guestState) error {
	g, err := docker.Open(ctx, st.Instance, "")
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed already, e.g. with docker rm
	}
	if err != nil {
		return err
	}
	return g.Down(ctx)
}

// dockerStatus asks the engine whether the container runs and what its
// healthcheck says.
func dockerStatus(ctx context.Context, st guestState) (running bool, health string) {
	g, err := docker.Open(ctx, st.Instance, "")
	if err != nil {
		return false, err.Error()
	}
	defer g.Close()
	s, err := g.Status(ctx)
	switch {
	case err != nil:
		return false, err.Error()
	case !s.Running:
		return false, fmt.Sprintf("container %s (exit code %d)", s.State, s.ExitCode)
	}
	if err := g.Healthz(ctx); err != nil {
		return true, err.Error()
	}
	return true, "ok"
}

// freshDockerGuest starts a container with a browser and an editor for one
// 'agentctl run' and points g at it; down removes it.
func freshDockerGuest(ctx context.Context, g *guestFlags, network bool, out io.Writer) (down func(), err error) {
	fmt.Fprintln(out, "starting a docker guest for this run (building the image first if it is missing: minutes the first time)")
	dg, err := docker.Up(ctx, docker.Config{
		Apps:    []string{"mousepad", "firefox"},
		Network: network,
		Build:   dockerBuild(),
	}, guestProgress(out))
	if err != nil {
		return nil, err
	}
	g.addr, g.tokenFile = dg.Addr, dg.TokenFile
	return func() {
		downCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := dg.Down(downCtx); err != nil {
			fmt.Fprintf(out, "warning: %v\n", err)
		}
	}, nil
}
