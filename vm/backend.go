package vm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentd-dev/agentd/guest/backend"
)

// Backend is the VM guest as a backend.Backend ("vm"). Base sets what a
// Spec does not (Repo, Limactl, VMType, StateRoot, ...); a named guest's
// Lima instance is backend.InstanceName(name), else Base.Name or a fresh one. The
// guest's agentd comes from ./bin (make agentd-linux-arm64).
type Backend struct{ Base Config }

var (
	_ backend.Backend    = Backend{}
	_ backend.Instance   = (*guestInstance)(nil)
	_ backend.FileReader = (*guestInstance)(nil)
	_ backend.LogReader  = (*guestInstance)(nil)
)

// Name is "vm".
func (Backend) Name() string { return "vm" }

// Check refuses what a VM guest cannot do.
func (Backend) Check(spec backend.Spec) error {
	if spec.Network {
		return errors.New("a VM guest is reached through Lima's forward only (--network is for --backend docker)")
	}
	if spec.Browser {
		return errors.New("--browser is for --backend local and docker so far: the VM's agentd does not start Chromium yet")
	}
	return backend.CheckImage(spec, "a VM")
}

// Up creates and starts a VM.
func (b Backend) Up(ctx context.Context, spec backend.Spec) (backend.Instance, error) {
	if err := b.Check(spec); err != nil {
		return nil, err
	}
	spec.Say("the first start downloads Debian's cloud image and installs the desktop: minutes")
	return backend.StartImage(ctx, spec, func(ctx context.Context, apps backend.ImageApps) (backend.Instance, error) {
		cfg := b.Base
		if spec.Name != "" {
			cfg.Name = backend.InstanceName(spec.Name)
		}
		if spec.Width > 0 {
			cfg.Size = fmt.Sprintf("%dx%d", spec.Width, spec.Height)
		}
		cfg.Apps, cfg.URL, cfg.File, cfg.ConfigDir = apps.Apps, apps.URL, apps.File, apps.ConfigDir
		cfg.Code = cfg.Code || spec.Code
		g, err := Up(ctx, cfg, spec.Progress)
		if err != nil {
			return nil, err
		}
		return newInstance(g, spec.Name, spec.AppsName(), apps.Outputs), nil
	})
}

// Open finds a named guest; fs.ErrNotExist when its state is gone.
func (b Backend) Open(_ context.Context, name string) (backend.Instance, error) {
	cfg := b.Base
	cfg.Name = backend.InstanceName(name)
	g, err := Open(cfg)
	if err != nil {
		return nil, err
	}
	return newInstance(g, name, "", backend.Outputs{}), nil
}

// List names the named VM guests.
func (Backend) List(context.Context) ([]string, error) { return backend.NamedOn("vm") }

// guestInstance is a VM guest as a backend.Instance.
type guestInstance struct {
	backend.ImageInstance
	g *Guest
}

func newInstance(g *Guest, name, apps string, out backend.Outputs) *guestInstance {
	return &guestInstance{g: g, ImageInstance: backend.ImageInstance{Files: g, Desc: backend.Description{
		Name: name, Backend: "vm", Display: "inside the VM", Addr: g.Addr, TokenFile: g.TokenFile,
		Instance: g.Name, Owner: "Lima instance " + g.Name, Home: g.Home, Apps: apps,
		Outputs: out.InGuest("vm", g.Home), Started: time.Now().UTC(),
	}}}
}

// Status asks Lima whether the VM runs and agentd whether it is healthy.
func (i *guestInstance) Status(ctx context.Context) backend.Status {
	s, err := i.g.Status(ctx)
	switch {
	case err != nil:
		return backend.Status{Health: err.Error()}
	case !s.Running:
		return backend.Status{Health: "VM " + s.State}
	case s.Health == "healthy":
		return backend.Status{Running: true, Health: "ok"}
	}
	return backend.Status{Running: true, Health: "agentd " + s.Health}
}

func (i *guestInstance) Down(ctx context.Context) error { return i.g.Down(ctx) }

// Close does nothing: every call runs limactl afresh.
func (i *guestInstance) Close() error { return nil }
