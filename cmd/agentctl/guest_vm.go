package main

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/agentd-dev/agentd/exercise"
	"github.com/agentd-dev/agentd/vm"
)

// A VM guest, like a Docker one, needs no supervisor: Lima keeps the VM.
// Its guest.json names the Lima instance ("agentd-" and the guest's name).

// vmUp starts a named VM guest for 'guest up' and records it in dir. The
// guest's agentd comes from ./bin (make agentd-linux-arm64).
func vmUp(ctx context.Context, o upOptions, dir string) (guestState, error) {
	return upRemote(ctx, o, dir, func(ctx context.Context, spec exercise.RemoteSpec) (*startedGuest, error) {
		g, err := vm.Up(ctx, vm.Config{
			Name:      instanceName(o.name),
			Size:      o.size,
			Apps:      spec.Apps,
			URL:       spec.URL,
			File:      spec.File,
			ConfigDir: spec.ConfigDir,
		}, guestProgress(os.Stdout))
		if err != nil {
			return nil, err
		}
		return &startedGuest{remote: g.Remote(), home: g.Home, addr: g.Addr, where: "VM", close: func() {}}, nil
	})
}

// vmDown deletes a VM guest.
func vmDown(ctx context.Context, st guestState) error {
	g, err := vm.Open(vm.Config{Name: st.Instance})
	if errors.Is(err, fs.ErrNotExist) {
		return nil // deleted already
	}
	if err != nil {
		return err
	}
	return g.Down(ctx)
}

// vmStatus asks Lima whether the VM runs and agentd whether it is healthy.
func vmStatus(ctx context.Context, st guestState) (running bool, health string) {
	g, err := vm.Open(vm.Config{Name: st.Instance})
	if err != nil {
		return false, err.Error()
	}
	s, err := g.Status(ctx)
	switch {
	case err != nil:
		return false, err.Error()
	case !s.Running:
		return false, "VM " + s.State
	case s.Health == "healthy":
		return true, "ok"
	}
	return true, "agentd " + s.Health
}
