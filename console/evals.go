package console

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"time"
)

// The evaluations agentctl eval writes (runner/eval, docs/eval.md): a
// folder holding plan.json (the tasks and the number of trials),
// results.jsonl (a line per finished trial) and trials/TASK/K/record/ (each
// trial's run record). The console reads them as they are on disk, during
// an evaluation too, and never writes them: a line cut short by a writer
// in progress is left out, not repaired.

var (
	// taskID is a task's id as the eval validator allows it.
	taskID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	// trialNo is a trial's number, 1-based.
	trialNo = regexp.MustCompile(`^[1-9][0-9]{0,5}$`)
)

const (
	evalPlan    = "plan.json"
	evalResults = "results.jsonl"
)

// EvalSummary is one evaluation in the list of evaluations.
type EvalSummary struct {
	ID      string    `json:"id"`
	Suite   string    `json:"suite"`
	Model   string    `json:"model"`
	Guest   string    `json:"guest"`
	Tasks   int       `json:"tasks"`
	Trials  int       `json:"trials"`
	Done    int       `json:"done"`
	Passed  int       `json:"passed"`
	Started time.Time `json:"started"`
}

// Eval is an evaluation made for the page: its tasks, in the plan's
// order, and its results; a trial without a result has not finished.
type Eval struct {
	EvalSummary
	TaskList []EvalTask   `json:"task_list"`
	Results  []EvalResult `json:"results"`
}

// EvalTask is a task of the plan.
type EvalTask struct {
	ID          string `json:"id"`
	Mode        string `json:"mode"`
	Instruction string `json:"instruction"`
}

// EvalResult is a trial's line of results.jsonl, as the page needs it.
type EvalResult struct {
	Task     string        `json:"task"`
	Trial    int           `json:"trial"`
	Pass     bool          `json:"pass"`
	Verdicts []EvalVerdict `json:"verdicts"`
	Steps    int           `json:"steps"`
	Tokens   int64         `json:"tokens"`
	Seconds  float64       `json:"seconds"`
	Error    string        `json:"error,omitempty"`
	// Record is the trial's run record, relative to the evaluation's
	// folder; empty when the trial never got one.
	Record string `json:"record,omitempty"`
}

// EvalVerdict is one checker's verdict: what it read from the guest, and
// why it failed.
type EvalVerdict struct {
	Checker string `json:"checker"`
	Pass    bool   `json:"pass"`
	Read    string `json:"read"`
	Why     string `json:"why,omitempty"`
}

// evalPlanFile is what the console reads of plan.json.
type evalPlanFile struct {
	Suite  string     `json:"suite"`
	Tasks  []EvalTask `json:"tasks"`
	Trials int        `json:"trials"`
	Model  string     `json:"model"`
	Guest  string     `json:"guest"`
}

// readEval reads the evaluation in the folder id of evalsDir.
func readEval(evalsDir, id string) (*Eval, error) {
	f, fi, err := openUnder(evalsDir, []string{id}, evalPlan)
	if err != nil {
		return nil, err
	}
	var p evalPlanFile
	err = json.NewDecoder(io.LimitReader(f, 64<<20)).Decode(&p)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", evalPlan, err)
	}
	ev := &Eval{EvalSummary: EvalSummary{ID: id, Suite: p.Suite, Model: p.Model, Guest: p.Guest, Tasks: len(p.Tasks),
		Trials: max(p.Trials, 1), Started: fi.ModTime()}, TaskList: p.Tasks, Results: []EvalResult{}}
	known := map[string]bool{}
	for i, t := range p.Tasks {
		if !taskID.MatchString(t.ID) {
			return nil, fmt.Errorf("%s: tasks[%d]: id %q", evalPlan, i, t.ID)
		}
		known[t.ID] = true
	}
	f, _, err = openUnder(evalsDir, []string{id}, evalResults)
	if errors.Is(err, os.ErrNotExist) {
		return ev, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", evalResults, err)
	}
	// Only whole lines: the last one may be being written.
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var r EvalResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", evalResults, n, err)
		}
		if !known[r.Task] || r.Trial < 1 || r.Trial > ev.Trials {
			return nil, fmt.Errorf("%s line %d: task %q trial %d is not in the plan", evalResults, n, r.Task, r.Trial)
		}
		ev.Results = append(ev.Results, r)
		ev.Done++
		if r.Pass {
			ev.Passed++
		}
	}
	return ev, sc.Err()
}

// listEvals reads the summaries of the evaluations in dir (its folders
// holding a plan.json), newest first. A folder that is not a readable
// evaluation is left out.
func listEvals(dir string) ([]EvalSummary, error) {
	return listNewest(dir, func(id string) (EvalSummary, error) {
		ev, err := readEval(dir, id)
		if err != nil {
			return EvalSummary{}, err
		}
		return ev.EvalSummary, nil
	}, func(ev EvalSummary) time.Time { return ev.Started })
}

// trialRecord is the folders of a trial's run record under its
// evaluation's folder, as runner/eval lays them out.
func trialRecord(id, task, trial string) []string {
	return []string{id, "trials", task, trial, "record"}
}

func (s *Server) serveEvals(w http.ResponseWriter, r *http.Request) {
	evals := []EvalSummary{}
	if s.cfg.EvalsDir != "" {
		var err error
		if evals, err = listEvals(s.cfg.EvalsDir); err != nil {
			s.cfg.Logf("console: list evaluations: %v", err)
			http.Error(w, "cannot list the evaluations", http.StatusInternalServerError)
			return
		}
	}
	writeJSON(w, struct {
		Evals []EvalSummary `json:"evals"`
	}{evals})
}

func (s *Server) serveEval(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.cfg.EvalsDir == "" || !runID.MatchString(id) {
		http.Error(w, "no such evaluation", http.StatusNotFound)
		return
	}
	ev, err := readEval(s.cfg.EvalsDir, id)
	s.serveRead(w, ev, err, "evaluation "+id, "no such evaluation", "this evaluation cannot be read")
}

// trialPath checks a trial's request: its evaluation, task and trial.
func (s *Server) trialPath(r *http.Request) (id, task, trial string, ok bool) {
	id, task, trial = r.PathValue("id"), r.PathValue("task"), r.PathValue("trial")
	return id, task, trial, s.cfg.EvalsDir != "" && runID.MatchString(id) && taskID.MatchString(task) && trialNo.MatchString(trial)
}

func (s *Server) serveTrialRun(w http.ResponseWriter, r *http.Request) {
	id, task, trial, ok := s.trialPath(r)
	if !ok {
		http.Error(w, "no such trial", http.StatusNotFound)
		return
	}
	f, _, err := openUnder(s.cfg.EvalsDir, trialRecord(id, task, trial), "events.jsonl")
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.cfg.Logf("console: evaluation %s, %s trial %s: %v", id, task, trial, err)
		}
		http.Error(w, "no such trial", http.StatusNotFound)
		return
	}
	defer f.Close()
	run, err := parseRun(f, id+"/"+task+"/"+trial)
	if err != nil {
		s.cfg.Logf("console: evaluation %s, %s trial %s: %v", id, task, trial, err)
		http.Error(w, "this trial's record cannot be read", http.StatusInternalServerError)
		return
	}
	writeJSON(w, run)
}

func (s *Server) serveTrialFile(w http.ResponseWriter, r *http.Request) {
	id, task, trial, ok := s.trialPath(r)
	name := r.PathValue("file")
	if !ok || !shotFile.MatchString(name) {
		http.Error(w, "no such file", http.StatusNotFound)
		return
	}
	f, fi, err := openUnder(s.cfg.EvalsDir, trialRecord(id, task, trial), name)
	s.servePNG(w, r, f, fi, err, fmt.Sprintf("evaluation %s, %s trial %s", id, task, trial))
}
