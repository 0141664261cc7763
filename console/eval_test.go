package console

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/prereq"
	_ "github.com/agentd-dev/agentd/local" // the local backend the trials run on
	"github.com/agentd-dev/agentd/runner/eval"
)

// runEval runs the built-in task note-type's scripted solution (its wrong
// one with wrong) on local guests into evals/name, as agentctl eval does.
func runEval(t *testing.T, evals, name string, trials int, wrong bool) *eval.Report {
	t.Helper()
	suite, err := eval.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if err := suite.Select([]string{"note-type"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := eval.Run(ctx, suite, eval.Options{Scripted: true, Wrong: wrong, Trials: trials, Parallel: 2,
		AgentdPath: agentdtest.Binary(t), Out: filepath.Join(evals, name)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != trials {
		t.Fatalf("%s: %d results, want %d", name, len(rep.Results), trials)
	}
	return rep
}

// The console lists evaluations made by real scripted evaluations on local
// guests: in Chromium, the list shows both, an evaluation's table has a
// row per task and a cell per trial with each checker's verdict as
// results.jsonl has it (right solutions pass every checker, the wrong one
// fails them, saying why), and a cell's link opens its trial's run: the
// steps of its record, their screenshots loaded.
func TestConsoleEvaluations(t *testing.T) {
	prereq.Programs(t, prereq.X, "Xvfb", "openbox", "mousepad", "xprop", "chromium")
	evals := t.TempDir()
	right := runEval(t, evals, "ev-right", 2, false)
	wrong := runEval(t, evals, "ev-wrong", 1, true)
	s := startConsole(t, Config{RunsDir: t.TempDir(), EvalsDir: evals})
	ctx := headless(t)
	if resp := run(t, ctx, chromedp.NavigateResponse(s.URL())); resp.Status != 200 {
		t.Fatalf("sign in: HTTP %d", resp.Status)
	}
	run(t, ctx, chromedp.Navigate(s.Base()+"/#/evals"))
	run(t, ctx, chromedp.Poll[bool](`document.querySelectorAll('#evals tbody tr[data-eval]').length === 2`))
	listed := run(t, ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#evals tbody tr')].map(tr =>
		tr.dataset.eval + ':' + tr.cells[3].textContent + ':' + tr.cells[4].textContent).sort().join(' ')`))
	if listed != "ev-right:2/2:2/2 ev-wrong:1/1:0/1" {
		t.Errorf("the list of evaluations: %q", listed)
	}

	type cell struct {
		State    string   `json:"state"`
		Link     string   `json:"link"`
		Verdicts []string `json:"verdicts"`
		Text     string   `json:"text"`
	}
	cells := func(ev string) []cell {
		run(t, ctx, chromedp.Navigate(s.Base()+"/#/evals/"+ev))
		run(t, ctx, chromedp.Poll[bool](fmt.Sprintf(`document.querySelector('#eval-title').textContent === 'Evaluation %s' &&
			document.querySelectorAll('#eval-table tbody td.trial').length > 0`, ev)))
		return run(t, ctx, chromedp.Evaluate[[]cell](`[...document.querySelectorAll('#eval-table tbody tr[data-task="note-type"] td.trial')].map(td => ({
			state: td.dataset.state,
			link: td.querySelector('a') ? td.querySelector('a').getAttribute('href') : '',
			verdicts: [...td.querySelectorAll('ul.verdicts li')].map(li => li.dataset.pass),
			text: td.textContent,
		}))`))
	}
	got := cells("ev-right")
	if len(got) != 2 {
		t.Fatalf("ev-right: %d trial cells, want 2: %+v", len(got), got)
	}
	for i, c := range got {
		r := right.Results[0]
		for _, x := range right.Results {
			if x.Trial == i+1 {
				r = x
			}
		}
		if c.State != "pass" || c.Link != fmt.Sprintf("#/evals/ev-right/note-type/%d", i+1) || strings.Join(c.Verdicts, ",") != "true,true" ||
			!strings.Contains(c.Text, r.Verdicts[0].Checker) || !strings.Contains(c.Text, r.Verdicts[1].Read) {
			t.Errorf("ev-right trial %d: %+v; its result: %+v", i+1, c, r)
		}
	}
	got = cells("ev-wrong")
	if w := wrong.Results[0]; len(got) != 1 || got[0].State != "fail" || strings.Join(got[0].Verdicts, ",") != "false,false" ||
		!strings.Contains(got[0].Text, w.Verdicts[0].Why) || !strings.Contains(got[0].Text, w.Verdicts[1].Why) || !strings.Contains(got[0].Text, w.Verdicts[1].Read) {
		t.Errorf("ev-wrong: %+v; its result: %+v", got, wrong.Results)
	}

	// A cell's link opens its trial's run: the steps of its record.
	run(t, ctx, chromedp.Navigate(s.Base()+"/#/evals/ev-right"))
	run(t, ctx, chromedp.WaitVisible(`#eval-table td.trial[data-trial="2"] a`))
	run(t, ctx, chromedp.Click(`#eval-table td.trial[data-trial="2"] a`))
	steps := 0
	for _, r := range right.Results {
		if r.Trial == 2 {
			steps = r.Steps
		}
	}
	run(t, ctx, chromedp.Poll[bool](fmt.Sprintf(`location.hash === '#/evals/ev-right/note-type/2' && !document.querySelector('#run-section').hidden &&
		document.querySelectorAll('li.step').length === %d && [...document.querySelectorAll('li.step img')].every(i => i.complete && i.naturalWidth > 0)`, steps)))
	page := run(t, ctx, chromedp.Evaluate[map[string]any](`({
		title: document.querySelector('#run-title').textContent,
		img: document.querySelector('li.step[data-step="2"] img').getAttribute('src'),
		width: document.querySelector('li.step[data-step="2"] img').naturalWidth,
		clicks: document.querySelectorAll('li.step[data-step="2"] g.mark-click').length,
		final: document.querySelector('#run-end .final').textContent,
		back: document.querySelector('#run-from a').getAttribute('href'),
	})`))
	suite, err := eval.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"img": "api/evals/ev-right/note-type/2/step-001.png",
		"width": 1280.0, "clicks": 1.0, "final": "Saved.", "back": "#/evals/ev-right"}
	for _, task := range suite.Tasks {
		if task.ID == "note-type" {
			want["title"] = task.Instruction
		}
	}
	for k, v := range want {
		if fmt.Sprint(page[k]) != fmt.Sprint(v) {
			t.Errorf("trial 2's run page: %s = %v, want %v", k, page[k], v)
		}
	}
}

// A trial's record is served from its evaluation's folder only: a trial
// folder or a record file that is a symlink is not followed, and a path
// that is no task or trial is not looked up.
func TestConsoleEvalSymlinkRefused(t *testing.T) {
	evals, outside := t.TempDir(), t.TempDir()
	mkTrial := func(base, ev, task, trial string) string {
		dir := filepath.Join(base, ev, "trials", task, trial, "record")
		if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			t.Fatal(err)
		}
		writeRun(t, filepath.Dir(dir), "record")
		plan := `{"suite":"s","tasks":[{"id":"` + task + `","mode":"computer","instruction":"x"}],"trials":2,"model":"scripted","guest":"local"}`
		if err := os.WriteFile(filepath.Join(base, ev, "plan.json"), []byte(plan), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	mkTrial(evals, "ev", "a", "1")
	elsewhere := mkTrial(outside, "ev", "a", "2")
	if err := os.Symlink(filepath.Dir(elsewhere), filepath.Join(evals, "ev", "trials", "a", "2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "step-001.png"), filepath.Join(evals, "ev", "trials", "a", "1", "record", "step-009.png")); err != nil {
		t.Fatal(err)
	}
	s := startConsole(t, Config{RunsDir: t.TempDir(), EvalsDir: evals})
	signedInCodes(t, s, map[string]int{
		"/api/evals":                      http.StatusOK,
		"/api/evals/ev":                   http.StatusOK,
		"/api/evals/ev/a/1":               http.StatusOK,
		"/api/evals/ev/a/1/step-001.png":  http.StatusOK,
		"/api/evals/ev/a/1/step-009.png":  http.StatusNotFound,
		"/api/evals/ev/a/2":               http.StatusNotFound,
		"/api/evals/ev/a/2/step-001.png":  http.StatusNotFound,
		"/api/evals/ev/a/0":               http.StatusNotFound,
		"/api/evals/ev/..%2F..%2Fx/1":     http.StatusNotFound,
		"/api/evals/ev/a/1/events.jsonl":  http.StatusNotFound,
		"/api/evals/nothing/a/1":          http.StatusNotFound,
		"/api/evals/ev/A/1/step-001.png":  http.StatusNotFound,
		"/api/evals/ev/a/1x/step-001.png": http.StatusNotFound,
	})
}
