package vm

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/exercise"
)

// TestExercise starts the exercise's desktop through Exercise, as
// agentctl exercise --guest vm does, against the fake limactl.
func TestExercise(t *testing.T) {
	f := newFake(t, http.StatusOK)
	base := f.config(t)
	base.Apps, base.URL, base.File, base.Env = nil, "", "", nil
	configDir := filepath.Join(t.TempDir(), "config")
	if err := exercise.WriteConfig(configDir); err != nil {
		t.Fatal(err)
	}
	spec := exercise.NewRemoteSpec(configDir)
	g, err := Exercise(base)(ctxT(t), spec, nil)
	if err != nil {
		t.Fatalf("Exercise: %v", err)
	}
	if g.Describe != "Lima VM "+base.Name || g.Addr != f.agentd.Listener.Addr().String() ||
		g.TokenFile != filepath.Join(f.stateRoot, base.Name, "token") {
		t.Errorf("remote guest %+v", g)
	}
	copied := filepath.Join(f.instance(base.Name), "fs/tmp/agentd-setup")
	env, err := os.ReadFile(filepath.Join(copied, "guest.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"SCREEN_SIZE='" + spec.Size + "'", "GUEST_APPS='" + strings.Join(spec.Apps, " ") + "'",
		"GUEST_URL='" + spec.URL + "'", "GUEST_FILE='" + spec.File + "'", "GUEST_CONFIG_DIR='/etc/agentd/config'"} {
		if !strings.Contains(string(env), "\n"+line+"\n") {
			t.Errorf("guest.env lacks %s:\n%s", line, env)
		}
	}
	// The exercise's configuration and its form server went in with the rest.
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
