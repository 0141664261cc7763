package console

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestListNewest: the run and evaluation lists hold the folders whose
// summary reads, newest first; a file, a folder whose name is no run's and
// one that does not read are left out, and a missing folder lists none.
func TestListNewest(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"old", "new", "unreadable", ".hidden"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	started := map[string]time.Time{"old": time.Unix(1, 0), "new": time.Unix(2, 0), ".hidden": time.Unix(3, 0), "file": time.Unix(4, 0)}
	read := func(id string) (string, error) {
		if _, ok := started[id]; !ok {
			return "", errors.New("unreadable")
		}
		return id, nil
	}
	got, err := listNewest(dir, read, func(id string) time.Time { return started[id] })
	if err != nil || !slices.Equal(got, []string{"new", "old"}) {
		t.Errorf("listNewest = %q, %v; want [new old]", got, err)
	}
	got, err = listNewest(filepath.Join(dir, "missing"), read, func(id string) time.Time { return started[id] })
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("listNewest of a missing folder = %#v, %v; want an empty list", got, err)
	}
}
