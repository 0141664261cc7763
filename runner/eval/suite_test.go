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

// TestBuiltinScripted runs every built-in task on local guests twice, two
// trials at once: its scripted solution must pass every checker, its
// scripted_wrong one must fail every checker — each checker tells right
// from wrong on the real desktop's state.
func TestBuiltinScripted(t *testing.T) {
	prereq.Programs(t, prereq.X, "Xvfb", "openbox", "firefox-esr", "mousepad", "chromium", "xprop")
	agentd := agentdtest.Binary(t)
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, wrong := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		out := filepath.Join(t.TempDir(), "eval")
		rep, err := Run(ctx, s, Options{Scripted: true, Wrong: wrong, AgentdPath: agentd, Out: out, Parallel: 2})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Results) != len(s.Tasks) {
			t.Fatalf("%d results, want %d", len(rep.Results), len(s.Tasks))
		}
		for _, r := range rep.Results {
			switch {
			case !wrong && !r.Pass:
				t.Errorf("%s scripted: did not pass: error %q, verdicts %+v", r.Task, r.Error, r.Verdicts)
			case wrong:
				for _, v := range r.Verdicts {
					if v.Pass {
						t.Errorf("%s scripted_wrong: checker %s passed (read %q): it cannot tell right from wrong", r.Task, v.Checker, v.Read)
					}
				}
				if r.Pass || len(r.Verdicts) == 0 {
					t.Errorf("%s scripted_wrong passed: %+v", r.Task, r.Verdicts)
				}
			}
		}
	}
}
