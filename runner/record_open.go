package runner

import (
	"fmt"
	"os"
	"path/filepath"
)

// OpenRecord reopens the record in dir to go on writing it, as a resumed run
// does: lines are appended, and screenshots of a step already written keep
// their files (the next one of that step gets the next number). A record
// an older version left readable by others is made private: its folder
// (which closes its screenshots too) and its events.
func OpenRecord(dir string) (*Record, error) {
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("run record: %w", err)
	}
	r := &Record{dir: dir, f: f, shots: map[int]int{}}
	if spares, err := filepath.Glob(filepath.Join(dir, spareShot)); err == nil {
		for _, name := range spares {
			os.Remove(name)
		}
	}
	names, err := filepath.Glob(filepath.Join(dir, "step-*.png"))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("run record: %w", err)
	}
	for _, name := range names {
		var step, n int
		base := filepath.Base(name)
		if k, _ := fmt.Sscanf(base, "step-%d-%d.png", &step, &n); k == 2 {
			r.shots[step] = max(r.shots[step], n)
		} else if k == 1 {
			r.shots[step] = max(r.shots[step], 1)
		}
	}
	return r, nil
}
