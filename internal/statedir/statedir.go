// Package statedir makes the private directories agentd's host side keeps
// guest state in (tokens, sockets, logs) and runs' checkpoints in, the
// tokens, and the JSON files of that state. They live in shared places like
// /tmp, where another user could have planted a symlink or a directory of
// their own, so each is checked to be a real directory of this user, mode
// 0700.
package statedir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/agentd-dev/agentd/internal/randhex"
)

// Root returns the private directory name under $XDG_RUNTIME_DIR, else
// <tmp>/name-<uid> (on macOS, TMPDIR is per user already), and below it
// the folders sub, each made and checked by Ensure.
func Root(name string, sub ...string) (string, error) {
	var root string
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		if fi, err := os.Stat(rt); err == nil && fi.IsDir() {
			root = filepath.Join(rt, name)
		}
	}
	if root == "" {
		root = filepath.Join(os.TempDir(), name+"-"+strconv.Itoa(os.Getuid()))
	}
	return ensureAll(root, sub)
}

// State returns the private directory name under $XDG_STATE_HOME (when it
// is an absolute path, else ~/.local/state), and below it the folders sub,
// each made and checked by Ensure: state that must outlive a reboot,
// unlike Root's, such as the checkpoints a run resumes from.
func State(name string, sub ...string) (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("state directory: %w", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	return ensureAll(filepath.Join(base, name), sub)
}

// ensureAll makes and checks dir, then each folder of sub below it.
func ensureAll(dir string, sub []string) (string, error) {
	if err := Ensure(dir); err != nil {
		return "", err
	}
	for _, s := range sub {
		dir = filepath.Join(dir, s)
		if err := Ensure(dir); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// Ensure creates dir (mode 0700) if missing and checks that it is a real
// directory owned by this user, tightening its mode to 0700.
func Ensure(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("state directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("state directory %s is not a directory (a symlink?)", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("state directory %s belongs to uid %d, not to us (uid %d)", dir, st.Uid, os.Getuid())
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("state directory: %w", err)
		}
	}
	return nil
}

// WriteToken writes a fresh agentd token to file, which must not exist: 32
// random bytes in hex, mode 0600.
func WriteToken(file string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	if _, err := f.WriteString(randhex.String(32) + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("token file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	return nil
}

// WriteJSON writes v to file as indented JSON, mode 0600, through a
// temporary file renamed over it: a reader finds the old file or the new
// one whole.
func WriteJSON(file string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// ReadJSON decodes file's JSON into v; a decoding error names the file.
func ReadJSON(file string, v any) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}
