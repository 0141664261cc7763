package exercise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"
)

// Docker and VM guests run docker/entrypoint.sh: the exercise asks for its
// applications through the entrypoint's environment (RemoteSpec), hands it
// WriteConfig's directory, and reads the results back out as files of the
// guest — the guest has no network, so the form is served inside it by
// pickup-form (exercise/cmd/pickup-form).

// Inside a remote guest: files relative to its user's home, and the form's
// address on its loopback (docker/entrypoint.sh).
const (
	RemoteNote    = "note.txt"
	RemoteRecords = "form/records.jsonl"
	RemoteReport  = "form/page.json"
	RemoteFormURL = "http://127.0.0.1:8080/"
)

// RemoteSpec is the exercise desktop a remote guest is asked to start.
type RemoteSpec struct {
	Size      string   // screen, "WxH"
	Apps      []string // GUEST_APPS, started in this order
	URL       string   // GUEST_URL: the page the browser opens
	File      string   // GUEST_FILE: the file the editor opens, relative to the home
	ConfigDir string   // a host directory to give the guest as GUEST_CONFIG_DIR
}

// RemoteGuest is a started remote guest, as the exercise uses it.
type RemoteGuest struct {
	Describe  string // for the progress output, e.g. "docker container agentd-guest-1a2b"
	Addr      string // agentd's address for guest.Dial
	TokenFile string
	// ReadFile reads a file of the guest, relative to its user's home,
	// through the guest's management channel; a missing file gives an
	// error wrapping fs.ErrNotExist.
	ReadFile func(ctx context.Context, rel string) ([]byte, error)
	Down     func(ctx context.Context) error
}

// StartRemote starts a remote guest with the desktop spec asks for,
// reporting progress a line at a time.
type StartRemote func(ctx context.Context, spec RemoteSpec, progress func(string)) (*RemoteGuest, error)

// pageTimeout bounds the wait for the form page's layout report after the
// guest is up (its entrypoint waited for the browser's window only).
const pageTimeout = time.Minute

// NewRemoteSpec is the exercise desktop for a remote guest, configured by
// configDir (written by WriteConfig).
func NewRemoteSpec(configDir string) RemoteSpec {
	return RemoteSpec{
		Size: fmt.Sprintf("%dx%d", ScreenWidth, ScreenHeight),
		// The browser starts last, so it has the keyboard focus at first.
		Apps:      []string{"form", "mousepad", "firefox"},
		URL:       RemoteFormURL,
		File:      RemoteNote,
		ConfigDir: configDir,
	}
}

func upRemote(ctx context.Context, start StartRemote, work string, out io.Writer) (*exerciseGuest, error) {
	configDir := filepath.Join(work, "config")
	if err := WriteConfig(configDir); err != nil {
		return nil, err
	}
	spec := NewRemoteSpec(configDir)
	fmt.Fprintf(out, "starting the exercise desktop in a guest (Xvfb, openbox, the form, Firefox ESR, mousepad, agentd)…\n")
	g, err := start(ctx, spec, func(line string) { fmt.Fprintf(out, "  %s\n", line) })
	if err != nil {
		return nil, fmt.Errorf("exercise: guest up: %w", err)
	}
	eg := &exerciseGuest{
		describe:  g.Describe,
		addr:      g.Addr,
		tokenFile: g.TokenFile,
		results: func(ctx context.Context) ([]Record, []byte, error) {
			data, err := g.ReadFile(ctx, RemoteRecords)
			if err != nil {
				return nil, nil, fmt.Errorf("exercise: read records: %w", err)
			}
			recs, err := ParseRecords(data, RemoteRecords)
			if err != nil {
				return nil, nil, err
			}
			note, err := g.ReadFile(ctx, RemoteNote)
			if err != nil {
				return nil, nil, fmt.Errorf("exercise: read the saved note: %w", err)
			}
			return recs, note, nil
		},
		down: g.Down,
	}
	if err := WaitPage(ctx, g); err != nil {
		downCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return nil, errors.Join(err, g.Down(downCtx))
	}
	return eg, nil
}

// WaitPage waits for the form page's layout report inside the guest and
// checks it against layout.go, as a local guest's browserReady does: the
// guest's entrypoint waited for the browser's window only.
func WaitPage(ctx context.Context, g *RemoteGuest) error {
	ctx, cancel := context.WithTimeout(ctx, pageTimeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		data, err := g.ReadFile(ctx, RemoteReport)
		switch {
		case err == nil:
			var rep PageReport
			if err := json.Unmarshal(data, &rep); err != nil {
				return fmt.Errorf("exercise: the form's page report: %w", err)
			}
			return CheckPage(rep)
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("exercise: the form's page report: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("exercise: form page not loaded in the guest's browser within %v: %w", pageTimeout, ctx.Err())
		case <-tick.C:
		}
	}
}
