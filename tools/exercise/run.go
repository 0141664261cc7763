// Package exercise is the no-API-key exercise's run harness (docs/design.md, "The exercise"): it
// starts the exercise desktop (exercise/desktop) on a guest backend, lets a
// scripted model (respserver) drive it through the real openai-go SDK and
// runner — with the computer tool, or in code mode with exec_py — reads
// the form's record (exercise/form) and the saved note back from the guest
// and verifies them against what the model typed.
package exercise

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/ctxsleep"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/tools/exercise/desktop"
	"github.com/agentd-dev/agentd/tools/exercise/form"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// RunConfig configures Run.
type RunConfig struct {
	// Out receives progress and the report.
	Out io.Writer
	// RecordDir is where the run record folder is created; default "runs".
	RecordDir string
	// Backend is where the desktop runs (backend.Get): local (default),
	// docker or vm; a fresh guest, removed afterwards.
	Backend string
	// AgentdPath is the agentd binary of a local guest (see
	// backend.Spec.AgentdPath).
	AgentdPath string
	// Code runs the exercise in code mode: the scripted model writes
	// Python (exec_py) instead of computer calls.
	Code bool
	// Browser runs the exercise in browser mode: the scripted model fills
	// the form through the browser toolset on agentd's Chromium, and only
	// the form's record is verified (there is no note); local guests only.
	Browser bool
	// Live drives the computer-mode exercise with a real model through
	// OPENAI_API_KEY (and OPENAI_BASE_URL when set) instead of the
	// scripted one; Model names it (default DefaultLiveModel). The same
	// task, host function and verification: what the model says it did
	// proves nothing.
	Live  bool
	Model string
}

// DefaultLiveModel is the model of a live exercise when RunConfig.Model is
// empty.
const DefaultLiveModel = "gpt-5.4"

// LiveMaxSteps bounds a live run: a real model takes more, smaller steps
// than the script.
const LiveMaxSteps = 60

// ErrNoAPIKey is returned by a live run without OPENAI_API_KEY, before any
// guest starts.
var ErrNoAPIKey = errors.New("exercise --live needs OPENAI_API_KEY (OPENAI_BASE_URL may point at another Responses-compatible server)")

// Report is what an exercise run did and found.
type Report struct {
	Steps        int
	Actions      int
	StepTimes    []time.Duration
	Usage        runner.Totals
	RecordDir    string
	GuestUp      time.Duration // guest up → healthy, or the claim of a pooled one
	Pooled       string        // the pooled guest taken, if one was
	RunTime      time.Duration // the runner's run alone
	Total        time.Duration // up → verified → down
	BeforeAction int           // actions BeforeAction approved
	// Browser: a browser-mode run, which has no note to check.
	Browser bool
}

// stepClock times the steps of a run for its report, a step running from
// its request to the next (the last to the final message), and prints the
// step and final lines every drive shows.
type stepClock struct{ last time.Time }

// observe takes a request or final event into rep and out and reports
// whether ev was one of them.
func (c *stepClock) observe(ev runner.Event, rep *Report, out io.Writer) bool {
	switch ev.Kind {
	case runner.EventRequest:
		if !c.last.IsZero() {
			rep.StepTimes = append(rep.StepTimes, ev.Time.Sub(c.last))
		}
		c.last = ev.Time
		fmt.Fprintf(out, "step %d/%d\n", ev.Step, ev.MaxSteps)
	case runner.EventFinal:
		rep.StepTimes = append(rep.StepTimes, ev.Time.Sub(c.last))
		fmt.Fprintf(out, "final message: %s\n", ev.Message)
	default:
		return false
	}
	return true
}

// Run starts an exercise guest on cfg.Backend, lets the scripted model
// drive it through the real runner and SDK, verifies the results read back
// from the guest and takes the guest down. A mismatch is an error that
// says what differed.
func Run(ctx context.Context, cfg RunConfig) (*Report, error) {
	start := time.Now()
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	if cfg.RecordDir == "" {
		cfg.RecordDir = "runs"
	}
	if cfg.Backend == "" {
		cfg.Backend = "local"
	}
	if cfg.Live && (cfg.Code || cfg.Browser) {
		return nil, errors.New("exercise: a live run is for the computer mode so far")
	}
	if cfg.Live && os.Getenv("OPENAI_API_KEY") == "" {
		return nil, ErrNoAPIKey
	}
	rep := &Report{}
	b, err := backend.Get(cfg.Backend)
	if err != nil {
		return nil, err
	}
	g, down, err := startGuest(ctx, b, cfg, out, rep)
	if err != nil {
		return nil, err
	}
	rep.GuestUp = time.Since(start)
	defer down()
	d := g.Describe()
	fmt.Fprintf(out, "guest up: %s %s, agentd at %s (%s)\n", d.Backend, d.Owner, d.Addr, rep.GuestUp.Round(time.Millisecond))
	files, ok := g.(backend.FileReader)
	if !ok {
		return rep, fmt.Errorf("exercise: a %s guest cannot read its results back", d.Backend)
	}

	client, err := dialView(ctx, g)
	if err != nil {
		return rep, err
	}
	defer client.Close()

	if cfg.Browser {
		rep.Browser = true
		if err := driveBrowser(ctx, client, d.FormURL, out, cfg, rep); err != nil {
			return rep, err
		}
		data, err := files.ReadFile(ctx, desktop.RemoteRecords)
		if err != nil {
			return rep, fmt.Errorf("exercise: read records: %w", err)
		}
		recs, err := form.ParseRecords(data, desktop.RemoteRecords)
		if err != nil {
			return rep, err
		}
		if problems := checkRecords(recs); len(problems) > 0 {
			return rep, mismatch(problems)
		}
		rep.Total = time.Since(start)
		return rep, nil
	}
	drives := drive
	if cfg.Code {
		drives = driveCode
	}
	if err := drives(ctx, client, out, cfg, rep); err != nil {
		return rep, err
	}
	if err := Verify(ctx, files); err != nil {
		return rep, err
	}
	rep.Total = time.Since(start)
	return rep, nil
}

// Spec is the guest an exercise run in cfg's mode asks for; 'agentctl guest
// pool --apps exercise' (with --code or --browser for those modes) keeps
// such guests ready.
func Spec(cfg RunConfig) backend.Spec {
	return backend.Spec{
		Width: desktop.ScreenWidth, Height: desktop.ScreenHeight, Desktop: desktop.Apps, AgentdPath: cfg.AgentdPath, Code: cfg.Code, Browser: cfg.Browser,
	}
}

// startGuest takes a guest from a pool ('agentctl guest pool --apps
// exercise') when one is offered, else starts one; down takes it down
// either way: a pooled guest serves one run only.
func startGuest(ctx context.Context, b backend.Backend, cfg RunConfig, out io.Writer, rep *Report) (g backend.Instance, down func(), err error) {
	spec := Spec(cfg)
	downCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	}
	// downOf takes g down; a guest of a pool on a cluster or one started
	// here is ours to take down.
	downOf := func(g backend.Instance) func() {
		return func() {
			ctx, cancel := downCtx()
			defer cancel()
			if err := g.Down(ctx); err != nil {
				fmt.Fprintf(out, "warning: guest down: %v\n", err)
			}
		}
	}
	if sp, ok := b.(backend.SharedPool); ok {
		// A pool on a cluster.
		g, err := sp.Claim(ctx, backend.KeyOf(b.Name(), spec))
		if err != nil {
			return nil, nil, fmt.Errorf("exercise: take a pooled guest: %w", err)
		}
		if g != nil {
			rep.Pooled = g.Describe().Instance
			fmt.Fprintf(out, "took the pooled %s guest %s for the exercise\n", b.Name(), rep.Pooled)
			return g, downOf(g), nil
		}
	}
	g, name, err := backend.Claim(ctx, backend.KeyOf(b.Name(), spec))
	if err != nil {
		return nil, nil, fmt.Errorf("exercise: take a pooled guest: %w", err)
	}
	if g != nil {
		rep.Pooled = name
		fmt.Fprintf(out, "took the pooled %s guest %s for the exercise\n", b.Name(), name)
		return g, func() {
			ctx, cancel := downCtx()
			defer cancel()
			g.Close()
			if _, err := backend.Down(ctx, name, false); err != nil {
				fmt.Fprintf(out, "warning: guest down: %v\n", err)
			}
		}, nil
	}
	fmt.Fprintf(out, "starting the exercise desktop in a %s guest (Xvfb, openbox, the form, Firefox ESR, mousepad, agentd)…\n", b.Name())
	spec.Progress = func(line string) { fmt.Fprintf(out, "  %s\n", line) }
	if g, err = b.Up(ctx, spec); err != nil {
		return nil, nil, fmt.Errorf("exercise: guest up: %w", err)
	}
	return g, downOf(g), nil
}

// Verify reads the form's records and the saved note back from an
// exercise guest and checks them: exactly one booking with the scripted
// values, and the note saved byte for byte. A repeated submission or
// repeated typing fails it, so it also checks that each was done once. A
// mismatch is an error that says what differed.
//
// The applications act on the model's last actions on their own time (on
// a loaded machine Firefox can be seconds behind its input, its form not
// yet sent when the run ends), so a mismatch is read again until
// resultsSettle has passed; only the last one is reported.
func Verify(ctx context.Context, files backend.FileReader) error {
	return verifyWithin(ctx, files, resultsSettle)
}

// resultsSettle bounds how long Verify waits for the desktop to catch up.
const resultsSettle = 20 * time.Second

func verifyWithin(ctx context.Context, files backend.FileReader, settle time.Duration) error {
	deadline := time.Now().Add(settle)
	for {
		records, note, err := results(ctx, files)
		if err == nil {
			err = verify(records, note)
		}
		if err == nil || time.Now().After(deadline) || ctxsleep.Sleep(ctx, 250*time.Millisecond) != nil {
			return err
		}
	}
}

// results reads the form's records and the saved note back from the guest.
func results(ctx context.Context, files backend.FileReader) ([]form.Record, []byte, error) {
	data, err := files.ReadFile(ctx, desktop.RemoteRecords)
	if err != nil {
		return nil, nil, fmt.Errorf("exercise: read records: %w", err)
	}
	recs, err := form.ParseRecords(data, desktop.RemoteRecords)
	if err != nil {
		return nil, nil, err
	}
	note, err := files.ReadFile(ctx, desktop.RemoteNote)
	if err != nil {
		return nil, nil, fmt.Errorf("exercise: read the saved note: %w", err)
	}
	return recs, note, nil
}

// startScripted starts the scripted model serving turns, points the real
// SDK at it and creates the run record (its folder's name ends in suffix).
func startScripted(turns []respserver.Turn, cfg RunConfig, suffix string, rep *Report) (*respserver.Server, openai.Client, *runner.Record, error) {
	model, baseURL := respserver.Start(turns...)
	// No API key is needed, but the SDK insists on one: a placeholder.
	api := openai.NewClient(option.WithBaseURL(baseURL), option.WithAPIKey("no-key-needed"))
	record, err := runner.CreateRecord(filepath.Join(cfg.RecordDir, time.Now().Format("20060102-150405")+suffix))
	if err != nil {
		model.Close()
		return nil, api, nil, err
	}
	rep.RecordDir = record.Dir()
	return model, api, record, nil
}

// scriptedRun is a run of the scripted model through the runner with one
// tool: the browser and code drives.
type scriptedRun struct {
	turns  []respserver.Turn
	suffix string // of the run record's folder
	model  string
	input  string
	tool   runner.Tool
	// onEvent sees every event but the step and final ones, which the run
	// reports itself.
	onEvent func(runner.Event)
}

// run runs s and checks the run (finish). It returns the scripted model,
// closed, for the checks of what it was sent.
func (s scriptedRun) run(ctx context.Context, cfg RunConfig, rep *Report, out io.Writer) (*respserver.Server, error) {
	model, api, record, err := startScripted(s.turns, cfg, s.suffix, rep)
	if err != nil {
		return nil, err
	}
	defer model.Close()
	var steps stepClock
	res, runErr := runner.NewRunner(api).Run(ctx, runner.RunOptions{
		Model:    s.model,
		Input:    s.input,
		MaxSteps: len(s.turns) + 1,
		Tools:    []runner.Tool{s.tool},
		OnEvent: func(ev runner.Event) {
			record.Event(ev)
			if !steps.observe(ev, rep, out) {
				s.onEvent(ev)
			}
		},
		OnDiagnostic: record.Diagnostic,
	})
	if err := finish(out, record, model, res, runErr, rep); err != nil {
		return nil, err
	}
	return model, nil
}

// drive runs the scripted model against the guest through the runner.
func drive(ctx context.Context, client *guest.Client, out io.Writer, cfg RunConfig, rep *Report) error {
	// The scripted model, or a live one: a nil model (no script to check
	// the requests against) and the SDK configured from the environment.
	var model *respserver.Server
	var api openai.Client
	var record *runner.Record
	modelName, maxSteps := "computer-use-exercise", 0
	if cfg.Live {
		api = openai.NewClient()
		modelName, maxSteps = cfg.Model, LiveMaxSteps
		if modelName == "" {
			modelName = DefaultLiveModel
		}
		var err error
		if record, err = runner.CreateRecord(filepath.Join(cfg.RecordDir, time.Now().Format("20060102-150405")+"-exercise-live")); err != nil {
			return err
		}
		rep.RecordDir = record.Dir()
		fmt.Fprintf(out, "live model %s\n", modelName)
	} else {
		turns, err := Script()
		if err != nil {
			return err
		}
		if model, api, record, err = startScripted(turns, cfg, "-exercise", rep); err != nil {
			return err
		}
		defer model.Close()
		maxSteps = len(turns) + 1
	}

	lookup, err := LookupPickup()
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var steps stepClock
	lookups := 0 // lookup_pickup calls answered
	toolset := runner.New(api, client, runner.WithName("exercise"))
	defer toolset.Close()
	res, runErr := toolset.Run(ctx, runner.RunOptions{
		Model:    modelName,
		Input:    Task,
		MaxSteps: maxSteps,
		Tools:    []runner.Tool{lookup},
		OnEvent: func(ev runner.Event) {
			record.Event(ev)
			mu.Lock()
			defer mu.Unlock()
			if steps.observe(ev, rep, out) {
				return
			}
			switch ev.Kind {
			case runner.EventAction:
				rep.Actions++
			case runner.EventFunction:
				if ev.Function.Name == LookupName && ev.Function.Error == "" {
					lookups++
				}
				fmt.Fprintf(out, "  function %s on %s: %s\n", ev.Function.Name, ev.CallID, map[bool]string{true: "answered", false: "failed"}[ev.Function.Error == ""])
			case runner.EventScreenshot:
				if s := ev.Screenshot; s != nil {
					fmt.Fprintf(out, "  screenshot %d×%d, %d bytes\n", s.Transform.Image.W, s.Transform.Image.H, s.Bytes)
				}
			}
		},
		OnDiagnostic: record.Diagnostic,
	}, runner.CallOptions{
		ApproveSafetyChecks: func(_ context.Context, call runner.CallInfo, checks []runner.SafetyCheck) (any, error) {
			// The script: approve exactly the check it carries, nothing
			// else. A live model's checks are its own: approved in this
			// throwaway guest, each one shown.
			ok := cfg.Live || len(checks) == 1 && checks[0].ID == SubmitCheck.ID && checks[0].Code == SubmitCheck.Code
			for _, c := range checks {
				fmt.Fprintf(out, "  safety check %s (%s) on %s: approved=%v\n", c.ID, c.Code, call.CallID, ok)
			}
			return ok, nil
		},
		BeforeAction: func(_ context.Context, a runner.ActionInfo) (any, error) {
			what := a.Action.String()
			if a.IsFinalScreenshot {
				what = "final screenshot"
			}
			mu.Lock()
			rep.BeforeAction++
			mu.Unlock()
			fmt.Fprintf(out, "  before_action %s #%d: %s → approved\n", a.CallID, a.Index, what)
			return true, nil
		},
	})
	if err := finish(out, record, model, res, runErr, rep); err != nil {
		return err
	}
	if cfg.Live {
		if lookups == 0 {
			return errors.New("exercise: the model never called " + LookupName)
		}
		return nil
	}
	if err := checkLookupAnswered(model); err != nil {
		return err
	}
	return checkAcknowledged(model)
}

// checkLookupAnswered proves the host function ran and its answer reached
// the API: a request carried a function_call_output with the pickup's name.
func checkLookupAnswered(model *respserver.Server) error {
	name, _ := json.Marshal(PickupName)
	for _, r := range model.Requests() {
		if r.Status == 200 && bytes.Contains(r.Body, []byte(`"function_call_output"`)) && bytes.Contains(r.Body, bytes.Trim(name, `"`)) {
			return nil
		}
	}
	return errors.New("exercise: no request carried lookup_pickup's answer")
}

// dialView connects to the guest's agentd with the model's view.
func dialView(ctx context.Context, g backend.Instance) (*guest.Client, error) {
	client, err := backend.Dial(ctx, g)
	if err != nil {
		return nil, fmt.Errorf("exercise: %w", err)
	}
	client.SetView(wire.View{Width: ModelView.Width, Height: ModelView.Height, Fit: true})
	return client, nil
}

// finish closes the run record, and checks the run and what the scripted
// model saw (model nil: a live run, nothing to check against).
func finish(out io.Writer, record *runner.Record, model *respserver.Server, res *runner.RunResult, runErr error, rep *Report) error {
	if err := record.Finish(res, runErr); err != nil {
		fmt.Fprintf(out, "warning: run record: %v\n", err)
	}
	if runErr != nil {
		return fmt.Errorf("exercise: run: %w", runErr)
	}
	rep.Steps, rep.Usage, rep.RunTime = res.Steps, res.Usage, res.Duration
	if model == nil {
		return nil
	}
	if err := model.Err(); err != nil {
		return fmt.Errorf("exercise: the model server saw a bad request: %w", err)
	}
	return nil
}

// checkAcknowledged proves the approval reached the API: the request after
// the call with the safety check acknowledged exactly that check.
func checkAcknowledged(model *respserver.Server) error {
	for _, r := range model.Requests() {
		if r.Status == 200 && bytes.Contains(r.Body, []byte(`"acknowledged_safety_checks"`)) &&
			bytes.Contains(r.Body, []byte(SubmitCheck.ID)) {
			return nil
		}
	}
	return errors.New("exercise: no request acknowledged the submit safety check")
}

func verify(recs []form.Record, note []byte) error {
	problems := checkRecords(recs)
	if string(note) != NoteText {
		problems = append(problems, fmt.Sprintf("saved note is %q, want %q", note, NoteText))
	}
	if len(problems) > 0 {
		return mismatch(problems)
	}
	return nil
}

func mismatch(problems []string) error {
	return fmt.Errorf("exercise: the desktop does not show what the model did:\n  %s", strings.Join(problems, "\n  "))
}

// checkRecords says how the records differ from the one booking the model
// made.
func checkRecords(recs []form.Record) []string {
	var problems []string
	if len(recs) != 1 {
		problems = append(problems, fmt.Sprintf("want exactly 1 record, found %d", len(recs)))
	} else {
		r := recs[0]
		if r.Name != PickupName {
			problems = append(problems, fmt.Sprintf("record name %q, want %q", r.Name, PickupName))
		}
		if r.Date != PickupDate {
			problems = append(problems, fmt.Sprintf("record date %q, want %q", r.Date, PickupDate))
		}
		if r.Slot != PickupSlot {
			problems = append(problems, fmt.Sprintf("record slot %q, want %q", r.Slot, PickupSlot))
		}
		if !r.Fragile {
			problems = append(problems, "record is not marked fragile")
		}
	}
	return problems
}

// Print writes the report.
func (r *Report) Print(w io.Writer) {
	if r.Browser {
		fmt.Fprintf(w, "\nexercise passed: the record matches what the model entered; the lookalike host was refused\n")
	} else {
		fmt.Fprintf(w, "\nexercise passed: the record and the saved note match what the model typed\n")
	}
	fmt.Fprintf(w, "  steps            %d (API requests), %d actions, %d before_action approvals\n", r.Steps, r.Actions, r.BeforeAction)
	var parts []string
	for i, d := range r.StepTimes {
		parts = append(parts, fmt.Sprintf("%d: %s", i+1, d.Round(time.Millisecond)))
	}
	fmt.Fprintf(w, "  time per step    %s (request, actions, screenshot)\n", strings.Join(parts, ", "))
	tokens := fmt.Sprintf("%d input + %d output = %d total over %d requests", r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.TotalTokens, r.Usage.Requests)
	if r.Usage.Incomplete {
		tokens += " (incomplete: a response lacked usage)"
	}
	fmt.Fprintf(w, "  tokens           %s\n", tokens)
	if r.Pooled != "" {
		fmt.Fprintf(w, "  guest up         %s (the pooled guest %s)\n", r.GuestUp.Round(time.Millisecond), r.Pooled)
	} else {
		fmt.Fprintf(w, "  guest up         %s\n", r.GuestUp.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "  run              %s\n", r.RunTime.Round(time.Millisecond))
	fmt.Fprintf(w, "  total            %s (guest up → verified → down)\n", r.Total.Round(time.Millisecond))
	fmt.Fprintf(w, "  run record       %s\n", r.RecordDir)
}
