package statedir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/internal/prereq"
)

func TestEnsure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := Ensure(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Ensure(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode after Ensure: %v %v, want 0700", fi.Mode(), err)
	}

	// A symlink planted where the directory should be is refused, even
	// when it points at a directory of ours.
	link := filepath.Join(t.TempDir(), "planted")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := Ensure(link); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Ensure(symlink) = %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Ensure(file); err == nil {
		t.Error("Ensure accepted a file")
	}
}

func TestEnsureRefusesAnotherUsersDirectory(t *testing.T) {
	if os.Getuid() != 0 {
		prereq.Missing(t, prereq.Root, "root, to make a directory of another user")
	}
	dir := filepath.Join(t.TempDir(), "theirs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 4321, 4321); err != nil {
		t.Fatal(err)
	}
	if err := Ensure(dir); err == nil || !strings.Contains(err.Error(), "belongs to uid 4321") {
		t.Errorf("Ensure(another user's directory) = %v", err)
	}
}

func TestRoot(t *testing.T) {
	rt := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", rt)
	root, err := Root("agentd-x")
	if err != nil || root != filepath.Join(rt, "agentd-x") {
		t.Fatalf("Root = %q, %v", root, err)
	}
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(rt, "missing"))
	t.Setenv("TMPDIR", rt)
	root, err = Root("agentd-x")
	if err != nil || !strings.HasPrefix(filepath.Base(root), "agentd-x-") || filepath.Dir(root) != rt {
		t.Fatalf("Root without a runtime directory = %q, %v", root, err)
	}

	// Each folder below is made private, and one planted as a symlink is
	// refused.
	guests, err := Root("agentd-x", "guests", "one")
	if err != nil || guests != filepath.Join(root, "guests", "one") {
		t.Fatalf("Root with folders = %q, %v", guests, err)
	}
	for _, d := range []string{filepath.Dir(guests), guests} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want 0700", d, fi.Mode(), err)
		}
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "planted")); err != nil {
		t.Fatal(err)
	}
	if _, err := Root("agentd-x", "planted", "one"); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Root through a planted symlink = %v", err)
	}
}

func TestWriteToken(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := WriteToken(file); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, %v: want 0600", fi.Mode(), err)
	}
	tok, _ := os.ReadFile(file)
	if len(strings.TrimSpace(string(tok))) != 64 {
		t.Errorf("token %q: want 64 hex digits", tok)
	}
	// Never over an existing file: a second guest must not share a token.
	if err := WriteToken(file); err == nil {
		t.Error("WriteToken replaced an existing token")
	}
}

// State is under $XDG_STATE_HOME when it is absolute, else under
// ~/.local/state (a relative XDG_STATE_HOME is ignored, as the XDG
// specification says); both private.
func TestState(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_STATE_HOME", xdg)
	dir, err := State("agentd")
	if err != nil || dir != filepath.Join(xdg, "agentd") {
		t.Fatalf("State = %q, %v", dir, err)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "relative")
	dir, err = State("agentd")
	if err != nil || dir != filepath.Join(home, ".local", "state", "agentd") {
		t.Fatalf("State = %q, %v", dir, err)
	}
	if runs, err := State("agentd", "runs"); err != nil || runs != filepath.Join(dir, "runs") {
		t.Fatalf("State with a folder = %q, %v", runs, err)
	}
	for _, d := range []string{filepath.Join(home, ".local"), filepath.Join(home, ".local", "state"), dir, filepath.Join(dir, "runs")} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want 0700", d, fi.Mode(), err)
		}
	}
}

// WriteJSON leaves a private file that ReadJSON decodes again; a file that
// is not JSON is an error naming it.
func TestJSON(t *testing.T) {
	type rec struct{ Name string }
	file := filepath.Join(t.TempDir(), "guest.json")
	if err := WriteJSON(file, rec{"g1"}); err != nil {
		t.Fatal(err)
	}
	var got rec
	if err := ReadJSON(file, &got); err != nil || got.Name != "g1" {
		t.Fatalf("ReadJSON = %+v, %v", got, err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v: want 0600", fi.Mode(), err)
	}
	os.WriteFile(file, []byte("{"), 0o600)
	if err := ReadJSON(file, &got); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("ReadJSON of a torn file = %v, want an error naming it", err)
	}
}
