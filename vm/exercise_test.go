package vm

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/tools/exercise/desktop"
)

// withoutReady is a desktop whose readiness is not checked: the fake
// guest has no browser to report the form page.
type withoutReady struct{ backend.ImageDesktop }

func (d withoutReady) Image(dir string) (backend.ImageApps, error) {
	apps, err := d.ImageDesktop.Image(dir)
	apps.Ready = nil
	return apps, err
}

// TestExercise starts the exercise's desktop through the vm backend, as
// agentctl exercise --guest vm does, against the fake limactl.
func TestExercise(t *testing.T) {
	f := newFake(t, http.StatusOK)
	base := f.config(t)
	base.Apps, base.URL, base.File, base.Env = nil, "", "", nil
	desk := withoutReady{desktop.Apps}
	spec, err := desk.Image(filepath.Join(t.TempDir(), "config"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Backend{Base: base}.Up(ctxT(t), backend.Spec{Width: desktop.ScreenWidth, Height: desktop.ScreenHeight, Desktop: desk})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	d := g.Describe()
	if d.Owner != "Lima instance "+base.Name || d.Addr != f.agentd.Listener.Addr().String() ||
		d.TokenFile != filepath.Join(f.stateRoot, base.Name, "token") || d.NoteFile != "vm:/home/agent/note.txt" {
		t.Errorf("description %+v", d)
	}
	copied := filepath.Join(f.instance(base.Name), "fs/tmp/agentd-setup")
	env, err := os.ReadFile(filepath.Join(copied, "guest.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"SCREEN_SIZE='1440x900'", "GUEST_APPS='" + strings.Join(spec.Apps, " ") + "'",
		"GUEST_URL='" + spec.URL + "'", "GUEST_FILE='" + spec.File + "'", "GUEST_CONFIG_DIR='/etc/agentd/config'"} {
		if !strings.Contains(string(env), "\n"+line+"\n") {
			t.Errorf("guest.env lacks %s:\n%s", line, env)
		}
	}
	// The exercise's configuration and its form server went in with the rest.
	configDir := spec.ConfigDir
	err = filepath.WalkDir(configDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(configDir, p)
		if _, err := os.Stat(filepath.Join(copied, "config", rel)); err != nil {
			t.Errorf("configuration file not copied in: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(copied, "pickup-form")); err != nil {
		t.Errorf("pickup-form not copied in: %v", err)
	}
	if err := g.Down(ctxT(t)); err != nil {
		t.Fatalf("Down: %v", err)
	}
	if _, err := os.Stat(f.instance(base.Name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("VM left after Down: %v", err)
	}
}
