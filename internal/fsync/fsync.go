// Package fsync writes files that must be on disk before the caller says
// they are saved.
package fsync

import "os"

// WriteFile opens name with flag and perm (as os.OpenFile does), writes data,
// and syncs and closes the file; the file is closed whatever fails.
func WriteFile(name string, flag int, perm os.FileMode, data []byte) error {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
