package main

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/exercise"
)

// startedGuest is a docker or vm guest that upRemote started.
type startedGuest struct {
	remote *exercise.RemoteGuest
	home   string // the desktop user's home in the guest
	addr   string // where agentctl reaches agentd
	where  string // "container" or "VM"
	close  func() // releases the connection to the engine; the guest runs on
}

// upRemote starts a docker or vm guest with the applications o asks for
// and records it in dir; start does the backend's part.
func upRemote(ctx context.Context, o upOptions, dir string, start func(context.Context, exercise.RemoteSpec) (*startedGuest, error)) (guestState, error) {
	st := guestState{Name: o.name, Backend: o.backend, Instance: instanceName(o.name), Apps: o.apps}
	var spec exercise.RemoteSpec
	switch o.apps {
	case "exercise":
		configDir := filepath.Join(dir, "config")
		if err := exercise.WriteConfig(configDir); err != nil {
			return st, err
		}
		defer os.RemoveAll(configDir) // the guest gets a copy
		spec = exercise.NewRemoteSpec(configDir)
	case "desktop":
		spec.Apps = []string{"mousepad", "firefox"}
	}
	g, err := start(ctx, spec)
	if err != nil {
		return st, err
	}
	defer g.close()
	down := func(err error) (guestState, error) {
		return st, errors.Join(err, g.remote.Down(context.WithoutCancel(ctx)))
	}
	if o.apps == "exercise" {
		if err := exercise.WaitPage(ctx, g.remote); err != nil {
			return down(err)
		}
		// Read back with 'docker exec' or 'limactl shell': agentd has no
		// file access.
		in := strings.ToLower(g.where) + ":"
		st.FormURL = exercise.RemoteFormURL
		st.RecordFile = in + path.Join(g.home, exercise.RemoteRecords)
		st.NoteFile = in + path.Join(g.home, exercise.RemoteNote)
	}
	st.Display = "inside the " + g.where
	st.Addr, st.TokenFile, st.Started = g.addr, g.remote.TokenFile, time.Now().UTC()
	if err := writeGuestState(dir, st); err != nil {
		return down(err)
	}
	return st, nil
}
