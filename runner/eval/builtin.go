package eval

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"sync"

	"github.com/agentd-dev/agentd/guest/backend"
)

// builtinFS holds the built-in suite: one task per file.
//
//go:embed builtin/*.json
var builtinFS embed.FS

var builtinOnce = sync.OnceValues(loadBuiltin)

// Builtin returns the built-in suite (docs/eval.md lists its tasks).
func Builtin() (*Suite, error) {
	s, err := builtinOnce()
	if err != nil {
		return nil, err
	}
	// A copy: Select trims the caller's list.
	return &Suite{Name: s.Name, Tasks: append([]*Task(nil), s.Tasks...)}, nil
}

func loadBuiltin() (*Suite, error) {
	names, err := fs.Glob(builtinFS, "builtin/*.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	s := &Suite{Name: "builtin"}
	for _, n := range names {
		data, err := builtinFS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		t, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("built-in %s: %w", n, err)
		}
		s.Tasks = append(s.Tasks, t)
	}
	return s, s.check()
}

// The built-in tasks' desktops are registered by name ("eval-" and the
// task's id), so 'agentctl guest pool --apps eval-ID' keeps guests ready
// for a task, which its trials claim.
func init() {
	s, err := builtinOnce()
	if err != nil {
		return // the suite's test and LoadSuite report it
	}
	for _, t := range s.Tasks {
		backend.RegisterDesktop(&taskDesktop{task: t})
	}
}
