package console

import (
	"fmt"
	"io/fs"
	"os"
)

// openRecordFile opens the file name of run id's record in runsDir: only a
// regular file, in a run folder that is a real folder of runsDir, neither
// reached through a symlink, so a link planted in a record (or a run
// folder that is one) cannot make the console serve a file from elsewhere.
// os.Root keeps every open inside runsDir; the Lstat results compared with
// what was opened refuse a link swapped in between. name and id are plain
// names (checked by the caller's patterns).
func openRecordFile(runsDir, id, name string) (*os.File, fs.FileInfo, error) {
	runs, err := os.OpenRoot(runsDir)
	if err != nil {
		return nil, nil, err
	}
	defer runs.Close()
	want, err := runs.Lstat(id)
	if err != nil {
		return nil, nil, err
	}
	if !want.IsDir() {
		return nil, nil, fmt.Errorf("run %s: not a folder: %w", id, fs.ErrNotExist)
	}
	run, err := runs.OpenRoot(id)
	if err != nil {
		return nil, nil, err
	}
	defer run.Close()
	if got, err := run.Stat("."); err != nil || !os.SameFile(want, got) {
		return nil, nil, fmt.Errorf("run %s: replaced while opened: %w", id, fs.ErrNotExist)
	}
	want, err = run.Lstat(name)
	if err != nil {
		return nil, nil, err
	}
	if !want.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("run %s: %s is not a regular file: %w", id, name, fs.ErrNotExist)
	}
	f, err := run.Open(name)
	if err != nil {
		return nil, nil, err
	}
	got, err := f.Stat()
	if err != nil || !os.SameFile(want, got) {
		f.Close()
		return nil, nil, fmt.Errorf("run %s: %s replaced while opened: %w", id, name, fs.ErrNotExist)
	}
	return f, got, nil
}
