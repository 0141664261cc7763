//go:build linux

package hidepaths

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd-dev/agentd/internal/prereq"
)

// TestRestrictHidesOnlyTheHiddenPaths restricts one goroutine's thread (a
// Landlock domain belongs to a thread; the thread ends with the goroutine)
// and tries what a desktop application would: the hidden directory's files
// are closed to reading, writing and listing, its neighbours stay open.
func TestRestrictHidesOnlyTheHiddenPaths(t *testing.T) {
	if _, err := ABI(); err != nil {
		prereq.Missing(t, prereq.X, "Landlock in this kernel (the guest starts its applications under it): %v", err)
	}
	dir := t.TempDir()
	secret := filepath.Join(dir, "run", "token")
	neighbour := filepath.Join(dir, "home", "note")
	for _, p := range []string{secret, neighbour} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("content"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		what string
		err  error
	}
	results := make(chan result)
	go func() {
		defer close(results)
		if err := Restrict([]string{filepath.Join(dir, "run")}); err != nil {
			results <- result{"restrict", err}
			return
		}
		_, err := os.ReadFile(secret)
		results <- result{"read the hidden file", err}
		err = os.WriteFile(filepath.Join(dir, "run", "new"), nil, 0o600)
		results <- result{"create in the hidden directory", err}
		_, err = os.ReadDir(filepath.Join(dir, "run"))
		results <- result{"list the hidden directory", err}
		_, err = os.ReadFile(neighbour)
		results <- result{"read a neighbour", err}
		err = os.WriteFile(filepath.Join(dir, "home", "new"), nil, 0o600)
		results <- result{"create beside", err}
	}()
	for r := range results {
		switch r.what {
		case "restrict":
			t.Fatal(r.err)
		case "read a neighbour", "create beside":
			if r.err != nil {
				t.Errorf("%s: %v", r.what, r.err)
			}
		default:
			if !errors.Is(r.err, fs.ErrPermission) {
				t.Errorf("%s: %v, want permission denied", r.what, r.err)
			}
		}
	}
	// Other threads of this process were never restricted.
	if _, err := os.ReadFile(secret); err != nil {
		t.Fatalf("after the goroutine: %v", err)
	}
}
