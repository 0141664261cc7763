package eval

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/prereq"
	_ "github.com/agentd-dev/agentd/local" // the local backend
)

// TestBuiltinSuiteShape: the built-in suite loads, has at least 12 tasks
// spanning the three modes, and every task has a right and a wrong script.
func TestBuiltinSuiteShape(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tasks) < 12 {
		t.Errorf("%d built-in tasks, want at least 12", len(s.Tasks))
	}
	modes := map[string]int{}
	for _, task := range s.Tasks {
		modes[task.Mode]++
		if len(task.Scripted) == 0 || len(task.ScriptedWrong) == 0 {
			t.Errorf("task %s lacks scripted or scripted_wrong", task.ID)
		}
	}
	for _, m := range []string{ModeComputer, ModeCode, ModeBrowser} {
		if modes[m] == 0 {
			t.Errorf("no built-in task in %s mode", m)
		}
	}
}

// TestBuiltinScripted runs every built-in task on local guests twice: its
// scripted solution must pass every checker, its scripted_wrong one must
// fail every checker — each checker tells right from wrong on the real
// desktop's state.
func TestBuiltinScripted(t *testing.T) {
	prereq.Programs(t, prereq.X, "Xvfb", "openbox", "firefox-esr", "mousepad", "chromium", "xprop")
	agentd := agentdtest.Binary(t)
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range s.Tasks {
		t.Run(task.ID, func(t *testing.T) {
			for _, wrong := range []bool{false, true} {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				out := filepath.Join(t.TempDir(), "eval")
				rep, err := Run(ctx, &Suite{Name: "one", Tasks: []*Task{task}}, Options{Scripted: true, Wrong: wrong, AgentdPath: agentd, Out: out})
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				rs := rep.Results
				if len(rs) != 1 {
					t.Fatalf("%d results, want 1", len(rs))
				}
				r := rs[0]
				if !wrong {
					if !r.Pass {
						t.Errorf("scripted: did not pass: error %q, verdicts %+v", r.Error, r.Verdicts)
					}
					continue
				}
				if r.Pass {
					t.Errorf("scripted_wrong passed: %+v", r.Verdicts)
				}
				for _, v := range r.Verdicts {
					if v.Pass {
						t.Errorf("scripted_wrong: checker %s passed (read %q): it cannot tell right from wrong", v.Checker, v.Read)
					}
				}
			}
		})
	}
}
