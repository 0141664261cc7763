package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/agentd-dev/agentd/exercise"
	"github.com/agentd-dev/agentd/vm"
)

// A VM guest, like a Docker one, needs no supervisor: Lima keeps the VM.
// Its guest.json names the Lima instance ("agentd-" and the guest's name).

// vmUp starts a named VM guest for 'guest up' and records it in dir. The
// guest's agentd comes from ./bin (make agentd-linux-arm64).
func vmUp(ctx context.Context, o upOptions, dir string) (guestState, error) {
	cfg := vm.Config{Name: instanceName(o.name), Size: o.size}
	st := guestState{Name: o.name, Backend: "vm", Instance: cfg.Name, Apps: o.apps}
	switch o.apps {
	case "exercise":
		configDir := filepath.Join(dir, "config")
		if err := exercise.WriteConfig(configDir); err != nil {
			return st, err
		}
		defer os.RemoveAll(configDir) // Up copies it into the guest
		spec := exercise.NewRemoteSpec(configDir)
		cfg.Apps, cfg.URL, cfg.File, cfg.ConfigDir = spec.Apps, spec.URL, spec.File, spec.ConfigDir
	case "desktop":
		cfg.Apps = []string{"mousepad", "firefox"}
	}
	g, err := vm.Up(ctx, cfg, guestProgress(os.Stdout))
	if err != nil {
		return st, err
	}
	if o.apps == "exercise" {
		if err := exercise.WaitPage(ctx, g.Remote()); err != nil {
			return st, errors.Join(err, g.Down(context.WithoutCancel(ctx)))
		}
		st.FormURL = exercise.RemoteFormURL
		st.RecordFile = "vm:" + path.Join(g.Home, exercise.RemoteRecords)
		st.NoteFile = "vm:" + path.Join(g.Home, exercise.RemoteNote)
	}
	st.Display = "inside the VM"
	st.Addr, st.TokenFile, st.Started = g.Addr, g.TokenFile, time.Now().UTC()
	if err := writeGuestState(dir, st); err != nil {
		return st, errors.Join(err, g.Down(context.WithoutCancel(ctx)))
	}
	return st, nil
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
