package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/runner"
	browsertool "github.com/agentd-dev/agentd/runner/browser"
	"github.com/agentd-dev/agentd/runner/codetool"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// Result is one trial's line in results.jsonl.
type Result struct {
	Task     string    `json:"task"`
	Trial    int       `json:"trial"` // 1-based
	Pass     bool      `json:"pass"`
	Verdicts []Verdict `json:"verdicts"`
	Steps    int       `json:"steps"`
	Tokens   int64     `json:"tokens"`
	// Seconds is the trial's time from the guest's start to its verdicts;
	// GuestUp the part spent starting (or claiming) the guest.
	Seconds float64 `json:"seconds"`
	GuestUp float64 `json:"guest_up_seconds"`
	// RunSeconds is the runner's run alone: the model and the actions.
	RunSeconds float64 `json:"run_seconds"`
	Pooled     bool    `json:"pooled,omitempty"`
	// Record is the run record's folder, relative to the output folder.
	Record string `json:"record,omitempty"`
	// Error is why the run or the guest failed; the verdicts still say
	// what the checkers read.
	Error string    `json:"error,omitempty"`
	Model string    `json:"model"`
	End   time.Time `json:"end"`
}

// trialConfig is what one trial needs besides its task.
type trialConfig struct {
	backend    backend.Backend
	agentdPath string
	// api is the real model's client; nil: the task's scripted solution
	// (wrong: its scripted_wrong one) served by respserver.
	api   *openai.Client
	model string
	wrong bool
	// dir is the trial's folder (the run record goes in it).
	dir string
	// out is the suite's output folder: Result.Record is relative to it.
	out string
}

// scriptedModel names the model of scripted trials.
const scriptedModel = "scripted"

// guestSpec is the guest a task's trial asks for.
func guestSpec(t *Task, agentdPath string) backend.Spec {
	return backend.Spec{
		Width: Screen.Width, Height: Screen.Height, Desktop: &taskDesktop{task: t}, AgentdPath: agentdPath,
		Code: t.Mode == ModeCode, Browser: t.Mode == ModeBrowser,
	}
}

// runTrial runs one trial of t in a fresh guest (a pooled one when a pool
// offers one) and judges it. The guest is down before it returns. A guest
// that cannot start or be reached is an error and no result: the trial
// never ran, and a resume runs it.
func runTrial(ctx context.Context, t *Task, n int, cfg trialConfig) (res Result, err error) {
	start := time.Now()
	res = Result{Task: t.ID, Trial: n, Model: cfg.model}
	defer func() { res.Seconds, res.End = time.Since(start).Seconds(), time.Now().UTC() }()
	inst, pooled, err := startGuest(ctx, cfg.backend, guestSpec(t, cfg.agentdPath))
	if err != nil {
		return res, fmt.Errorf("eval: %s trial %d: %w", t.ID, n, err)
	}
	res.Pooled = pooled
	res.GuestUp = time.Since(start).Seconds()
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if derr := inst.Down(dctx); derr != nil {
			err = errors.Join(err, fmt.Errorf("eval: %s trial %d: guest down: %w", t.ID, n, derr))
		}
	}()
	d := inst.Describe()
	files, ok := inst.(backend.FileReader)
	if !ok {
		return res, fmt.Errorf("eval: a %s guest cannot read files back for the checkers", d.Backend)
	}
	st := state{files: files, command: commanderOf(inst), server: strings.TrimSuffix(d.FormURL, "/")}
	recordsAt := remoteRecords
	if d.Backend == "local" {
		recordsAt = localRecords
	}
	st.records = func(ctx context.Context) ([]byte, error) { return files.ReadFile(ctx, recordsAt) }

	client, err := dial(ctx, inst)
	if err != nil {
		return res, fmt.Errorf("eval: %s trial %d: %w", t.ID, n, err)
	}
	defer client.Close()
	view := Screen
	if t.View != nil {
		view = *t.View
	}
	client.SetView(wire.View{Width: view.Width, Height: view.Height, Fit: true})

	runErr := drive(ctx, t, client, cfg, &st, &res)
	// The checkers judge whatever the run left, also after an error: a
	// run that ran out of steps may still have done the task.
	res.Verdicts = settle(ctx, t, st)
	res.Pass = runErr == nil && len(res.Verdicts) > 0
	for _, v := range res.Verdicts {
		res.Pass = res.Pass && v.Pass
	}
	if runErr != nil {
		res.Error = runErr.Error()
	}
	// What the task's server received, kept with the trial for people.
	if data, err := st.records(ctx); err == nil && len(data) > 0 {
		_ = os.WriteFile(filepath.Join(cfg.dir, "records.jsonl"), data, 0o600)
	}
	return res, nil
}

// settleTime bounds how long the checkers wait for the desktop to show
// what the run did: an application handles input, saves and posts after
// the action returned, later on a loaded machine.
const settleTime = 8 * time.Second

// settle judges the checkers until all pass or settleTime has passed: the
// state a run leaves converges, and a wrong one never passes.
func settle(ctx context.Context, t *Task, st state) []Verdict {
	deadline := time.Now().Add(settleTime)
	for {
		vs := check(ctx, t, st)
		pass := true
		for _, v := range vs {
			pass = pass && v.Pass
		}
		if pass || time.Now().After(deadline) {
			return vs
		}
		select {
		case <-ctx.Done():
			return vs
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// startGuest claims a pooled guest made for spec, else starts one.
func startGuest(ctx context.Context, b backend.Backend, spec backend.Spec) (backend.Instance, bool, error) {
	g, name, err := backend.Claim(ctx, backend.KeyOf(b.Name(), spec))
	if err != nil {
		return nil, false, fmt.Errorf("take a pooled guest: %w", err)
	}
	if g != nil {
		return pooledGuest{g, name}, true, nil
	}
	g, err = b.Up(ctx, spec)
	if err != nil {
		return nil, false, fmt.Errorf("guest up: %w", err)
	}
	return g, false, nil
}

// pooledGuest is a claimed pooled guest: Down ends it through its name,
// as a pooled guest serves one trial only.
type pooledGuest struct {
	backend.Instance
	name string
}

func (p pooledGuest) Down(ctx context.Context) error {
	p.Instance.Close()
	_, err := backend.Down(ctx, p.name, false)
	return err
}

// ReadFile reads through the claimed guest.
func (p pooledGuest) ReadFile(ctx context.Context, rel string) ([]byte, error) {
	f, ok := p.Instance.(backend.FileReader)
	if !ok {
		return nil, errors.New("the pooled guest cannot read files back")
	}
	return f.ReadFile(ctx, rel)
}

// dial connects to the guest's agentd through its backend (backend.Dialer:
// a tunnel or port-forward where the backend has one).
func dial(ctx context.Context, inst backend.Instance) (*guest.Client, error) {
	if p, ok := inst.(pooledGuest); ok {
		inst = p.Instance // its own dialer, not the wrapper's
	}
	c, err := backend.Dial(ctx, inst)
	if err != nil {
		return nil, fmt.Errorf("dial agentd: %w", err)
	}
	return c, nil
}

// drive runs the model on the task through the runner in the task's mode,
// with a run record in the trial's folder. Approvals are given: the guest
// is fresh and thrown away after the trial.
func drive(ctx context.Context, t *Task, client *guest.Client, cfg trialConfig, st *state, res *Result) error {
	api := cfg.api
	if api == nil {
		turns := t.Scripted
		if cfg.wrong {
			turns = t.ScriptedWrong
		}
		if len(turns) == 0 {
			return fmt.Errorf("task %s has no scripted solution", t.ID)
		}
		rturns, err := scriptTurns(turns, st.server)
		if err != nil {
			return err
		}
		model, base := respserver.Start(rturns...)
		defer model.Close()
		c := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("no-key-needed"))
		api = &c
	}
	rec, err := runner.CreateRecord(filepath.Join(cfg.dir, "record"))
	if err != nil {
		return err
	}
	res.Record, _ = filepath.Rel(cfg.out, rec.Dir())
	// The start line names the task for whoever reads the record (the
	// console's replay), as agentctl run's does.
	rec.Note("start", map[string]any{"task": expand(t.Instruction, st.server), "model": cfg.model, "mode": t.Mode,
		"max_steps": t.MaxSteps, "eval_task": t.ID})
	opts := runner.RunOptions{
		Model:        cfg.model,
		Input:        expand(t.Instruction, st.server),
		MaxSteps:     t.MaxSteps,
		OnDiagnostic: rec.Diagnostic,
		OnEvent:      rec.Event,
	}
	var out *runner.RunResult
	switch t.Mode {
	case ModeComputer:
		ts := runner.New(*api, client, runner.WithName("eval"))
		defer ts.Close()
		out, err = ts.Run(ctx, opts, runner.CallOptions{
			ApproveSafetyChecks: func(context.Context, runner.CallInfo, []runner.SafetyCheck) (any, error) {
				return true, nil
			},
		})
	case ModeCode:
		// The view reaches agentd with a screenshot, before the code's first.
		if _, err := client.Screenshot(ctx); err != nil {
			return errors.Join(fmt.Errorf("set the view: %w", err), rec.Finish(nil, err))
		}
		opts.Tools = []runner.Tool{codetool.New(client, codetool.Options{})}
		out, err = runner.NewRunner(*api).Run(ctx, opts)
	case ModeBrowser:
		tool, b, berr := browserTool(ctx, client, st.server)
		if berr != nil {
			return errors.Join(berr, rec.Finish(nil, berr))
		}
		st.browser = b
		opts.Tools = []runner.Tool{tool}
		out, err = runner.NewRunner(*api).Run(ctx, opts)
	}
	if ferr := rec.Finish(out, err); ferr != nil && err == nil {
		err = ferr
	}
	if out != nil {
		res.Steps, res.Tokens, res.RunSeconds = out.Steps, out.Usage.TotalTokens, out.Duration.Seconds()
	}
	return err
}

// browserTool is the browser toolset on the guest's Chromium, allowed the
// task server's origin alone (any origin without a server), every change
// confirmed.
func browserTool(ctx context.Context, client *guest.Client, server string) (runner.Tool, BrowserReader, error) {
	d, err := client.Browser()
	if err != nil {
		return nil, nil, fmt.Errorf("guest browser: %w", err)
	}
	var opts []browser.Option
	opts = append(opts, browser.WithConfirm(func(context.Context, browser.ConsentRequest) (any, error) { return true, nil }))
	if server != "" {
		u, err := url.Parse(server)
		if err != nil {
			return nil, nil, fmt.Errorf("task server %q: %w", server, err)
		}
		origin := u.Scheme + "://" + u.Host
		allow, err := browser.AllowOrigins(origin)
		if err != nil {
			return nil, nil, err
		}
		if err := d.SetAllowedOrigins(ctx, []string{origin}); err != nil {
			return nil, nil, fmt.Errorf("guest browser: %w", err)
		}
		opts = append(opts, browser.WithURLPolicy(allow))
	}
	ts, err := browser.New(d, opts...)
	if err != nil {
		return nil, nil, err
	}
	return browsertool.NewTool(ts), d, nil
}

// scriptTurns turns a task's scripted solution into respserver turns,
// "{{server}}" replaced by the trial's server.
func scriptTurns(turns []Turn, server string) ([]respserver.Turn, error) {
	var out []respserver.Turn
	for i, turn := range turns {
		switch {
		case len(turn.Actions) > 0:
			var acts []string
			for _, a := range turn.Actions {
				acts = append(acts, expand(string(a), server))
			}
			out = append(out, respserver.Call(acts...))
		case turn.Code != "":
			args, err := json.Marshal(map[string]string{"code": expand(turn.Code, server)})
			if err != nil {
				return nil, err
			}
			out = append(out, respserver.Items(respserver.FunctionCall(codetool.Name, string(args))))
		case len(turn.Browser) > 0:
			var items []respserver.Item
			for j, c := range turn.Browser {
				raw, err := json.Marshal(c.Args)
				if err != nil {
					return nil, fmt.Errorf("turn %d call %d: %w", i, j, err)
				}
				it := respserver.FunctionCall(c.Name, expand(string(raw), server))
				it["call_id"] = fmt.Sprintf("call_%d_%d", i, j)
				items = append(items, it)
			}
			out = append(out, respserver.Items(items...))
		default:
			out = append(out, respserver.Final(turn.Final))
		}
		out[len(out)-1].Delay = time.Duration(turn.ThinkMS) * time.Millisecond
	}
	return out, nil
}
