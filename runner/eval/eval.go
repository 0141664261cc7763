package eval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/agentd-dev/agentd/guest/backend"
)

// Options configure an evaluation.
type Options struct {
	// Guest is the backend: local (default), docker or vm.
	Guest      string
	AgentdPath string
	// Scripted drives each trial with the task's scripted solution;
	// otherwise Model through OPENAI_API_KEY (and OPENAI_BASE_URL).
	Scripted bool
	// Wrong drives with scripted_wrong instead (tests: every checker must
	// tell it from the right one).
	Wrong bool
	Model string
	// Parallel trials at once (default 1); Trials of each task (default 1).
	Parallel int
	Trials   int
	// Out is the output folder: plan.json, results.jsonl, trials/.
	Out string
	// Progress receives a line per finished trial; nil: none.
	Progress io.Writer
}

// ErrNoAPIKey is returned before any guest starts by a real-model
// evaluation without OPENAI_API_KEY.
var ErrNoAPIKey = errors.New("eval: a real model needs OPENAI_API_KEY (OPENAI_BASE_URL may point at another Responses-compatible server); or --scripted runs the tasks' scripted solutions")

// plan is what an evaluation was asked to do, kept in its folder so that
// a resume runs the very same tasks the same way.
type plan struct {
	Suite    string  `json:"suite"`
	Tasks    []*Task `json:"tasks"`
	Trials   int     `json:"trials"`
	Scripted bool    `json:"scripted"`
	Wrong    bool    `json:"wrong,omitempty"`
	Model    string  `json:"model"`
	Guest    string  `json:"guest"`
}

const (
	planFile    = "plan.json"
	resultsFile = "results.jsonl"
)

// Report is what an evaluation's invocation did.
type Report struct {
	// Results are every trial's, this invocation's and earlier ones'.
	Results []Result
	// Ran trials in Wall at Parallel at once (this invocation only).
	Ran      int
	Wall     time.Duration
	Parallel int
}

// Run evaluates suite as opts say, in a new output folder.
func Run(ctx context.Context, suite *Suite, opts Options) (*Report, error) {
	if opts.Trials <= 0 {
		opts.Trials = 1
	}
	if opts.Guest == "" {
		opts.Guest = "local"
	}
	if opts.Scripted {
		opts.Model = scriptedModel
	}
	p := plan{Suite: suite.Name, Tasks: suite.Tasks, Trials: opts.Trials, Scripted: opts.Scripted, Wrong: opts.Wrong, Model: opts.Model, Guest: opts.Guest}
	if err := preflight(p); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(opts.Out)), 0o755); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if err := os.Mkdir(opts.Out, 0o700); err != nil {
		return nil, fmt.Errorf("eval: a new output folder: %w", err)
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(opts.Out, planFile), data, 0o600); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	return run(ctx, p, opts)
}

// Resume goes on with the evaluation in dir: only the trials without a
// result run, each in a fresh guest. The plan is dir's; opts give the
// parallelism, the progress and the agentd binary.
func Resume(ctx context.Context, dir string, opts Options) (*Report, error) {
	data, err := os.ReadFile(filepath.Join(dir, planFile))
	if err != nil {
		return nil, fmt.Errorf("eval: resume: %w", err)
	}
	var p plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("eval: resume: %s: %w", planFile, err)
	}
	for _, t := range p.Tasks {
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("eval: resume: %w", err)
		}
	}
	if err := preflight(p); err != nil {
		return nil, err
	}
	opts.Out, opts.Trials, opts.Scripted, opts.Wrong, opts.Model, opts.Guest = dir, p.Trials, p.Scripted, p.Wrong, p.Model, p.Guest
	return run(ctx, p, opts)
}

// preflight refuses what would fail every trial, before any guest starts.
func preflight(p plan) error {
	if !p.Scripted && os.Getenv("OPENAI_API_KEY") == "" {
		return ErrNoAPIKey
	}
	if !p.Scripted && p.Model == "" {
		return errors.New("eval: no model: --model or --scripted")
	}
	b, err := backend.Get(p.Guest)
	if err != nil {
		return err
	}
	for _, t := range p.Tasks {
		if p.Scripted && len(t.Scripted) == 0 || p.Wrong && len(t.ScriptedWrong) == 0 {
			return fmt.Errorf("eval: task %s has no scripted solution", t.ID)
		}
		if err := b.Check(guestSpec(t, "")); err != nil {
			return fmt.Errorf("eval: task %s: %w", t.ID, err)
		}
		if p.Guest != "local" {
			if why := imageProblem(t); why != "" {
				return fmt.Errorf("eval: task %s cannot run in a %s guest: %s", t.ID, p.Guest, why)
			}
		}
	}
	return nil
}

type job struct {
	task  *Task
	trial int
}

// run runs the plan's trials that have no result in opts.Out yet.
func run(ctx context.Context, p plan, opts Options) (*Report, error) {
	resultsPath := filepath.Join(opts.Out, resultsFile)
	done, err := readResults(resultsPath)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, r := range done {
		have[trialKey(r.Task, r.Trial)] = true
	}
	var jobs []job
	for _, t := range p.Tasks {
		for k := 1; k <= p.Trials; k++ {
			if !have[trialKey(t.ID, k)] {
				jobs = append(jobs, job{t, k})
			}
		}
	}
	b, err := backend.Get(p.Guest)
	if err != nil {
		return nil, err
	}
	cfg := trialConfig{backend: b, agentdPath: opts.AgentdPath, model: p.Model, wrong: p.Wrong, out: opts.Out}
	if !p.Scripted {
		c := openai.NewClient()
		cfg.api = &c
	}
	f, err := os.OpenFile(resultsPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()

	parallel := max(opts.Parallel, 1)
	prog := progress{w: opts.Progress, total: len(p.Tasks) * p.Trials, done: len(done), start: time.Now(), todo: len(jobs)}
	for _, r := range done {
		if r.Pass {
			prog.passed++
		}
	}
	var (
		mu       sync.Mutex
		writeErr error
		wg       sync.WaitGroup
	)
	queue := make(chan job)
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				r, err := runJob(ctx, j, cfg)
				if err != nil || ctx.Err() != nil {
					// Stopped: no result, so a resume runs it again.
					if err != nil {
						mu.Lock()
						writeErr = errors.Join(writeErr, err)
						mu.Unlock()
					}
					continue
				}
				mu.Lock()
				if err := writeResult(f, r); err != nil {
					writeErr = errors.Join(writeErr, err)
				} else {
					done = append(done, r)
					prog.add(r)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case queue <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(queue)
	wg.Wait()
	rep := &Report{Results: done, Ran: prog.ran, Wall: time.Since(prog.start), Parallel: parallel}
	if writeErr != nil {
		return rep, writeErr
	}
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("eval stopped (%w): 'agentctl eval --resume %s' runs the trials left", err, opts.Out)
	}
	return rep, nil
}

// runJob runs one trial in a fresh folder of its own: what an earlier,
// interrupted attempt left there is removed with it, as its guest is gone.
func runJob(ctx context.Context, j job, cfg trialConfig) (Result, error) {
	cfg.dir = filepath.Join(cfg.out, "trials", j.task.ID, strconv.Itoa(j.trial))
	if err := os.RemoveAll(cfg.dir); err != nil {
		return Result{}, fmt.Errorf("eval: %w", err)
	}
	if err := os.MkdirAll(cfg.dir, 0o700); err != nil {
		return Result{}, fmt.Errorf("eval: %w", err)
	}
	return runTrial(ctx, j.task, j.trial, cfg)
}

func trialKey(task string, trial int) string { return task + "\x00" + strconv.Itoa(trial) }

// writeResult appends r as one line and syncs it: a result on disk is a
// trial a resume never runs again.
func writeResult(f *os.File, r Result) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("eval: results: %w", err)
	}
	return f.Sync()
}

// readResults reads results.jsonl; a last line cut short by a crash is
// dropped from the file, as its trial never finished writing.
func readResults(path string) ([]Result, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i+1 != len(data) {
		data = data[:i+1]
		if err := os.Truncate(path, int64(len(data))); err != nil {
			return nil, fmt.Errorf("eval: drop a cut result line: %w", err)
		}
	}
	var out []Result
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	seen := map[string]bool{}
	for n := 1; sc.Scan(); n++ {
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("eval: %s line %d: %w", path, n, err)
		}
		if seen[trialKey(r.Task, r.Trial)] {
			return nil, fmt.Errorf("eval: %s line %d: a second result for %s trial %d", path, n, r.Task, r.Trial)
		}
		seen[trialKey(r.Task, r.Trial)] = true
		out = append(out, r)
	}
	return out, sc.Err()
}

// ReadResults reads the results of the evaluation in dir.
func ReadResults(dir string) ([]Result, error) { return readResults(filepath.Join(dir, resultsFile)) }

// progress prints a line per finished trial: done/total, passed so far,
// and the time left at this invocation's pace.
type progress struct {
	w                   io.Writer
	total, done, passed int
	todo, ran           int
	start               time.Time
}

func (p *progress) add(r Result) {
	p.done++
	p.ran++
	if r.Pass {
		p.passed++
	}
	if p.w == nil {
		return
	}
	elapsed := time.Since(p.start)
	eta := time.Duration(float64(elapsed) / float64(p.ran) * float64(p.todo-p.ran))
	verdict := "FAIL"
	if r.Pass {
		verdict = "pass"
	}
	fmt.Fprintf(p.w, "eval %d/%d done, %d passed, %s elapsed, ETA %s  (%s #%d %s %.1fs)\n",
		p.done, p.total, p.passed, elapsed.Round(time.Second), eta.Round(time.Second), r.Task, r.Trial, verdict, r.Seconds)
}
