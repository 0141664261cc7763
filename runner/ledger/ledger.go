// Package ledger keeps a run's checkpoints in a folder so that a run can
// survive the process that ran it: each checkpoint is an independent,
// complete copy written crash-safely (write, fsync, rename, fsync the
// folder), and one process at a time holds the folder.
//
// A checkpoint file ends with the SHA-256 of its content, so a torn or
// truncated file is recognised and skipped: Last then returns the previous
// good checkpoint, which is kept until a newer one is known to be whole.
//
// A checkpoint holds the run's responses verbatim (typed text, the model's
// code), so the folder is private: made 0700, its files 0600.
package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentd-dev/agentd/internal/fsync"
)

// keep is how many checkpoints stay on disk: the newest and the one before
// it, in case the newest cannot be read.
const keep = 2

const prefix, suffix = "checkpoint-", ".json"

// ErrNone means the folder holds no readable checkpoint.
var ErrNone = errors.New("ledger: no readable checkpoint")

// File is a folder of checkpoints held by this process.
type File struct {
	dir  string
	lock *os.File
	seq  int
}

// Open takes the folder dir (creating it, private) for this process. It refuses a
// folder another live process holds; a lock left by a dead process is
// taken over (the operating system releases it with the process).
func Open(dir string) (*File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	// A folder that already existed (made by someone else, or by an older
	// version) is made private too.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	lock, err := acquire(filepath.Join(dir, "ledger.lock"))
	if err != nil {
		return nil, err
	}
	f := &File{dir: dir, lock: lock}
	names, err := f.names()
	if err != nil {
		f.Close()
		return nil, err
	}
	if n := len(names); n > 0 {
		f.seq = seqOf(names[n-1])
	}
	return f, nil
}

// Dir is the ledger's folder.
func (f *File) Dir() string { return f.dir }

// Close releases the folder.
func (f *File) Close() error {
	if f.lock == nil {
		return nil
	}
	err := release(f.lock)
	f.lock = nil
	return err
}

// Save writes data as the newest checkpoint and removes those older than
// the previous one. When Save returns nil the checkpoint is on disk.
func (f *File) Save(data []byte) error {
	if f.lock == nil {
		return errors.New("ledger: closed")
	}
	f.seq++
	name := filepath.Join(f.dir, fmt.Sprintf("%s%09d%s", prefix, f.seq, suffix))
	sum := sha256.Sum256(data)
	body := make([]byte, 0, len(data)+66)
	body = append(body, data...)
	body = append(body, '\n')
	body = append(body, hex.EncodeToString(sum[:])...)
	body = append(body, '\n')
	tmp := name + ".tmp"
	if err := fsync.WriteFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600, body); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("ledger: checkpoint %d: %w", f.seq, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("ledger: checkpoint %d: %w", f.seq, err)
	}
	if err := syncDir(f.dir); err != nil {
		return fmt.Errorf("ledger: checkpoint %d: %w", f.seq, err)
	}
	names, err := f.names()
	if err != nil {
		return err
	}
	for len(names) > keep {
		if err := os.Remove(filepath.Join(f.dir, names[0])); err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		names = names[1:]
	}
	return nil
}

// Last returns the newest whole checkpoint and its number, skipping torn
// ones.
func (f *File) Last() (data []byte, seq int, err error) {
	names, err := f.names()
	if err != nil {
		return nil, 0, err
	}
	for i := len(names) - 1; i >= 0; i-- {
		b, err := os.ReadFile(filepath.Join(f.dir, names[i]))
		if err != nil {
			return nil, 0, fmt.Errorf("ledger: %w", err)
		}
		if data, ok := verify(b); ok {
			return data, seqOf(names[i]), nil
		}
	}
	return nil, 0, ErrNone
}

// verify splits a checkpoint file into its content and checks its sum.
func verify(b []byte) ([]byte, bool) {
	b, ok := bytes.CutSuffix(b, []byte("\n"))
	if !ok {
		return nil, false
	}
	i := bytes.LastIndexByte(b, '\n')
	if i < 0 {
		return nil, false
	}
	data, want := b[:i], string(b[i+1:])
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:]) == want
}

// names lists the checkpoint files, oldest first.
func (f *File) names() ([]string, error) {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, prefix) && strings.HasSuffix(n, suffix) && seqOf(n) > 0 {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return seqOf(a) - seqOf(b) })
	return names, nil
}

func seqOf(name string) int {
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, prefix), suffix))
	if err != nil {
		return 0
	}
	return n
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
