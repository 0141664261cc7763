package desktop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/local"
	"github.com/agentd-dev/agentd/tools/exercise/form"
)

// Apps is the exercise desktop as a guest's desktop ("exercise"): on a
// local guest, Prepare's desktop; in the guest image (Docker and VM
// guests), docker/entrypoint.sh's applications configured by WriteConfig —
// the guest has no network, so the form is served inside it by pickup-form
// (exercise/cmd/pickup-form) and the results are read back out as files of
// the guest.
var Apps interface {
	backend.ImageDesktop
	local.Desktop
} = apps{}

func init() { backend.RegisterDesktop(Apps) }

// Inside a guest: files relative to its user's home (a local guest: the
// desktop's directory), and the form's address on a remote guest's
// loopback (docker/entrypoint.sh).
const (
	RemoteNote    = "note.txt"
	RemoteRecords = "form/records.jsonl"
	RemoteReport  = "form/page.json"
	RemoteFormURL = "http://127.0.0.1:8080/"
)

type apps struct{}

func (apps) Name() string     { return "exercise" }
func (apps) Size() (int, int) { return ScreenWidth, ScreenHeight }

// Image writes the applications' configuration into dir. The browser
// starts last, so it has the keyboard focus at first; the desktop is ready
// once the form page reports the layout.go places.
func (apps) Image(dir string) (backend.ImageApps, error) {
	if err := WriteConfig(dir); err != nil {
		return backend.ImageApps{}, err
	}
	return backend.ImageApps{
		Apps:      []string{"form", "mousepad", "firefox"},
		URL:       RemoteFormURL,
		File:      RemoteNote,
		ConfigDir: dir,
		Outputs:   backend.Outputs{FormURL: RemoteFormURL, RecordFile: RemoteRecords, NoteFile: RemoteNote},
		Ready:     WaitPage,
	}, nil
}

// Local prepares the desktop in dir for a local guest.
func (apps) Local(dir string, cfg *local.Config) (local.Prepared, error) {
	d, err := Prepare(Config{Dir: dir})
	if err != nil {
		return nil, err
	}
	d.Configure(cfg)
	return d, nil
}

// pageTimeout bounds the wait for the form page's layout report after the
// guest is up (its entrypoint waited for the browser's window only).
const pageTimeout = time.Minute

// WaitPage waits for the form page's layout report inside the guest and
// checks it against layout.go, as a local guest's browserReady does: the
// guest's entrypoint waited for the browser's window only.
func WaitPage(ctx context.Context, files backend.FileReader) error {
	ctx, cancel := context.WithTimeout(ctx, pageTimeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		data, err := files.ReadFile(ctx, RemoteReport)
		switch {
		case err == nil:
			var rep form.PageReport
			if err := json.Unmarshal(data, &rep); err != nil {
				return fmt.Errorf("exercise: the form's page report: %w", err)
			}
			return CheckPage(rep)
		case !errors.Is(err, fs.ErrNotExist) && ctx.Err() == nil:
			return fmt.Errorf("exercise: the form's page report: %w", err)
		}
		select {
		case <-ctx.Done():
			// A read cut off by the deadline says less than the wait's end.
			return fmt.Errorf("exercise: form page not loaded in the guest's browser within %v: %w", pageTimeout, ctx.Err())
		case <-tick.C:
		}
	}
}
