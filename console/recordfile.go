package console

import (
	"fmt"
	"io/fs"
	"os"
)

// openRecordFile opens the file name of run id's record in runsDir (see
// openUnder).
func openRecordFile(runsDir, id, name string) (*os.File, fs.FileInfo, error) {
	return openUnder(runsDir, []string{id}, name)
}

// openUnder opens the file name in the folder base/dirs[0]/dirs[1]/…: only
// a regular file, in folders that are real folders, none reached through
// a symlink, so a link planted in a record or an evaluation (or a folder
// that is one) cannot make the console serve a file from elsewhere.
// os.Root keeps every open inside base; the Lstat results compared with
// what was opened refuse a link swapped in between. dirs and name are
// plain names (checked by the caller's patterns).
func openUnder(base string, dirs []string, name string) (*os.File, fs.FileInfo, error) {
	root, err := os.OpenRoot(base)
	if err != nil {
		return nil, nil, err
	}
	// root is replaced by each folder's own as the walk goes down.
	defer func() { root.Close() }()
	for _, d := range dirs {
		want, err := root.Lstat(d)
		if err != nil {
			return nil, nil, err
		}
		if !want.IsDir() {
			return nil, nil, fmt.Errorf("%s: not a folder: %w", d, fs.ErrNotExist)
		}
		sub, err := root.OpenRoot(d)
		if err != nil {
			return nil, nil, err
		}
		root.Close()
		root = sub
		if got, err := root.Stat("."); err != nil || !os.SameFile(want, got) {
			return nil, nil, fmt.Errorf("%s: replaced while opened: %w", d, fs.ErrNotExist)
		}
	}
	want, err := root.Lstat(name)
	if err != nil {
		return nil, nil, err
	}
	if !want.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%v: %s is not a regular file: %w", dirs, name, fs.ErrNotExist)
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, nil, err
	}
	got, err := f.Stat()
	if err != nil || !os.SameFile(want, got) {
		f.Close()
		return nil, nil, fmt.Errorf("%v: %s replaced while opened: %w", dirs, name, fs.ErrNotExist)
	}
	return f, got, nil
}
