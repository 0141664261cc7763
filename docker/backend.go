package docker

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/healthz"
)

// Backend is the Docker guest as a backend.Backend ("docker"). Base sets
// what a Spec does not (Image, StateRoot, limits, ...); a named guest's
// container is backend.InstanceName(name). A missing image is built when agentctl
// runs in this repository (docker/Dockerfile is there).
type Backend struct{ Base Config }

var (
	_ backend.Backend    = Backend{}
	_ backend.Instance   = (*instance)(nil)
	_ backend.FileReader = (*instance)(nil)
	_ backend.LogReader  = (*instance)(nil)
	_ backend.StartTimer = (*instance)(nil)
)

// Name is "docker".
func (Backend) Name() string { return "docker" }

// Check refuses a desktop the guest image cannot show.
func (Backend) Check(spec backend.Spec) error {
	return backend.CheckImage(spec, "a container")
}

// Up starts a container; with spec.Name, named backend.InstanceName(spec.Name).
func (b Backend) Up(ctx context.Context, spec backend.Spec) (backend.Instance, error) {
	if err := b.Check(spec); err != nil {
		return nil, err
	}
	spec.Say("building the image first if it is missing: minutes the first time")
	return backend.StartImage(ctx, spec, func(ctx context.Context, apps backend.ImageApps) (backend.Instance, error) {
		cfg := b.Base
		if spec.Name != "" {
			cfg.Name = backend.InstanceName(spec.Name)
		}
		if spec.Width > 0 {
			cfg.Size = fmt.Sprintf("%dx%d", spec.Width, spec.Height)
		}
		cfg.Network = cfg.Network || spec.Network
		cfg.Code = cfg.Code || spec.Code
		cfg.Browser = cfg.Browser || spec.Browser
		cfg.Apps, cfg.URL, cfg.File, cfg.ConfigDir = apps.Apps, apps.URL, apps.File, apps.ConfigDir
		if cfg.Build == nil {
			cfg.Build = buildHere()
		}
		g, err := Up(ctx, cfg, spec.Progress)
		if err != nil {
			return nil, err
		}
		return newInstance(g, spec.Name, spec.AppsName(), apps.Outputs), nil
	})
}

// buildHere builds a missing guest image from the repository this program
// runs in; elsewhere a missing image is an error that says how to build it.
func buildHere() *BuildOptions {
	if _, err := os.Stat(DefaultDockerfile); err != nil {
		return nil
	}
	return &BuildOptions{Context: "."}
}

// Open finds a named guest's container; fs.ErrNotExist when it is gone.
func (b Backend) Open(ctx context.Context, name string) (backend.Instance, error) {
	g, err := Open(ctx, backend.InstanceName(name), b.Base.StateRoot)
	if err != nil {
		return nil, err
	}
	return newInstance(g, name, "", backend.Outputs{}), nil
}

// List names the named Docker guests.
func (Backend) List(context.Context) ([]string, error) { return backend.NamedOn("docker") }

// instance is a guest container.
type instance struct {
	backend.ImageInstance
	g *Guest
}

func newInstance(g *Guest, name, apps string, out backend.Outputs) *instance {
	return &instance{g: g, ImageInstance: backend.ImageInstance{Files: g, Desc: backend.Description{
		Name: name, Backend: "docker", Display: "inside the container", Addr: g.Addr, TokenFile: g.TokenFile,
		Instance: g.Name, Owner: "container " + g.Name, Home: g.Home, Apps: apps,
		Outputs: out.InGuest("container", g.Home), Started: time.Now().UTC(),
	}}}
}

// Status asks the engine whether the container runs and agentd whether it
// is healthy.
func (i *instance) Status(ctx context.Context) backend.Status {
	s, err := i.g.Status(ctx)
	switch {
	case err != nil:
		return backend.Status{Health: err.Error()}
	case !s.Running:
		return backend.Status{Health: fmt.Sprintf("container %s (exit code %d)", s.State, s.ExitCode)}
	}
	return backend.Status{Running: true, Health: healthz.Describe(healthz.Probe(ctx, i.g.Addr))}
}

// StartMilestones says where the start's time went (Guest.StartMilestones).
func (i *instance) StartMilestones(ctx context.Context) ([]backend.Milestone, error) {
	return i.g.StartMilestones(ctx)
}

func (i *instance) Down(ctx context.Context) error { return i.g.Down(ctx) }
func (i *instance) Close() error                   { return i.g.Close() }
