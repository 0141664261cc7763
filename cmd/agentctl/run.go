package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/console"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/randhex"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/ledger"
)

func init() { register("run", "run a task on a guest with the OpenAI computer tool", runRun) }

// guestConn is what run needs of a guest connection.
type guestConn interface {
	runner.Driver
	SetView(wire.View)
	Close() error
}

// dialGuest connects to agentd; tests replace it with a fake desktop.
var dialGuest = func(ctx context.Context, addr, token string) (guestConn, error) {
	return guest.Dial(ctx, addr, token)
}

func runRun(ctx context.Context, args []string) error {
	return runCommand(ctx, args, os.Stdin, os.Stdout, os.Stderr)
}

func runCommand(ctx context.Context, args []string, stdin *os.File, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentctl run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var g guestFlags
	g.register(fs)
	model := fs.String("model", "gpt-5.4", "model to run the computer tool with")
	maxSteps := fs.Int("max-steps", runner.DefaultMaxSteps, "most API requests the run may send")
	recordDir := fs.String("record-dir", "runs", "folder under which each run writes its record, <timestamp>-<id>/")
	viewSize := fs.String("view", "1280x800", "the model sees the screen fitted within WxH (aspect kept); coordinates are mapped back")
	network := fs.Bool("network", false, "with --guest docker: give the container a network (default none)")
	withConsole := fs.Bool("console", false, "serve the console for this run (the desktop live, the steps) and print its one-time URL")
	confirm := fs.Bool("confirm", false, "ask before each action and each final screenshot (before_action): on the terminal and, with --console, in the page; the first answer wins")
	mode := fs.String("mode", "computer", "computer: the computer tool; code: the model writes Python (pyautogui) run in the guest (agentd --code); browser: the browser toolset on the guest's Chromium (agentd --browser)")
	resume := fs.String("resume", "", "continue the run whose record is this folder (runs/<id>) from its last checkpoint, on --guest")
	stream := fs.Bool("stream", false, "read each response as a stream and print the model's text as it arrives")
	eager := fs.Bool("eager", false, "with --stream: run each completed call while the response is still arriving (effects cannot be undone if the model's response then changes)")
	reconcileFlag := fs.String("reconcile", "", "with --resume, when the run stopped during an action: done (its effects show on the desktop) or not-done (run it again); asked on the terminal when not given")
	var budget budgetFlags
	budget.register(fs)
	var origins originList
	fs.Var(&origins, "allow-origin", "with --mode browser: an origin the model may navigate to (scheme://host[:port]); repeat for more")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: agentctl run --guest ADDR|NAME|docker [--token-file F] [--mode computer|code|browser [--allow-origin O]...] [--model M] [--max-steps N] [--view WxH] [--record-dir D] [--stream [--eager]] [--console] [--confirm] [--context-images N] [--context-bytes B] "task"
       agentctl run --guest ADDR|NAME --resume runs/<id> [--reconcile done|not-done]

Runs the task with the OpenAI Responses API computer tool on the guest.
--guest docker runs it in a fresh container (Firefox ESR and Mousepad, no
network unless --network), removed afterwards.
Uses OPENAI_API_KEY, and OPENAI_BASE_URL when set. Pending safety checks
(and, with --confirm, each action) are asked on the terminal (y/N) and, with
--console, in the page; without either they are refused.
The record (private: 0700, files 0600) never holds typed text or the model's
code. Each run keeps checkpoints, which do, in a private folder of its own
($XDG_STATE_HOME or ~/.local/state, agentd/runs/<id>), removed when the run
ends unless it failed in computer mode; --resume continues a run
that stopped (crash, kill, error) from the end of its last completed step,
with the remaining request budget, the same task and model, and the run's
--view, --confirm, --stream, --eager and context budget unless given. If it stopped
during an action, that action may or may not have run: it is shown with the
last screenshot and asked about on the terminal (or given with --reconcile);
it is never run again unless answered not-done.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	task := strings.TrimSpace(strings.Join(fs.Args(), " "))
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := budget.check(fs); err != nil {
		return err
	}
	given, err := parseReconcile(*reconcileFlag)
	if err != nil {
		return err
	}
	if given != "" && *resume == "" {
		return errors.New("--reconcile is for --resume")
	}
	approver := runner.NewTerminalApprover(stdin, stderr)
	var led *ledger.File
	var cp *runner.Checkpoint
	var uncertain *runner.Uncertain
	var answer runner.Reconciliation
	if *resume != "" {
		if task != "" {
			return errors.New("--resume continues the recorded task; give no task")
		}
		start, l, c, err := resumable(*resume)
		if err != nil {
			return err
		}
		defer l.Close()
		led, cp, task, *maxSteps = l, c, start.Task, max(start.MaxSteps, 1)
		budget.resumed(start)
		if start.Model != "" {
			*model = start.Model
		}
		if start.Mode != "" && start.Mode != "computer" {
			return fmt.Errorf("--resume: the run used --mode %s; only computer mode runs resume so far", start.Mode)
		}
		*mode = "computer"
		// The run goes on as it started unless a flag says otherwise: the
		// checkpoint's calls are in the image space of the run's view.
		if !set["view"] {
			if start.View != "" {
				*viewSize = start.View
			} else if sp := c.ImageSpace; sp.W > 0 && sp.H > 0 {
				*viewSize = fmt.Sprintf("%dx%d", sp.W, sp.H)
			}
		}
		if !set["confirm"] {
			*confirm = start.Confirm
		}
		if !set["stream"] {
			*stream = start.Stream
		}
		if !set["eager"] {
			*eager = start.Eager && *stream
		}
		if uncertain, err = cp.Uncertain(); err != nil {
			return fmt.Errorf("--resume %s: %w", *resume, err)
		}
		if uncertain == nil && given != "" {
			fmt.Fprintf(stdout, "no action of the checkpoint is uncertain; --reconcile %s is not used\n", given)
		}
		if uncertain != nil {
			if answer, err = reconcile(ctx, uncertain, given, start.lastShot, approver, runner.IsTerminal(stdin), stdout); err != nil {
				return err
			}
		}
	}
	switch {
	case g.addr == "":
		return errors.New("--guest is required (or $AGENTD_ADDR)")
	case task == "":
		return errors.New(`the task is required: agentctl run --guest ADDR "task"`)
	case *maxSteps < 1:
		return fmt.Errorf("--max-steps is %d; it must be at least 1", *maxSteps)
	case *mode != "computer" && *mode != "code" && *mode != "browser":
		return fmt.Errorf("--mode %q: use computer, code or browser", *mode)
	case *eager && !*stream:
		return errors.New("--eager needs --stream: calls can only start early while a response streams")
	case len(origins) > 0 && *mode != "browser":
		return errors.New("--allow-origin is for --mode browser")
	case *confirm && *mode != "computer":
		return errors.New("--confirm is for --mode computer (the browser mode asks before each navigation anyway)")
	// The command line first, then the environment.
	case os.Getenv("OPENAI_API_KEY") == "":
		return errors.New("OPENAI_API_KEY is not set (OPENAI_BASE_URL may point at another Responses-compatible server)")
	}
	fresh, err := backend.Get(g.addr)
	if err != nil && *network {
		return errors.New("--network is for --guest docker")
	}
	view, err := parseView(*viewSize, "", true)
	if err != nil {
		return err
	}
	if fresh != nil {
		down, _, err := freshGuest(ctx, fresh, &g, backend.Spec{Network: *network, Code: *mode == "code"}, stdout)
		if err != nil {
			return err
		}
		defer down()
	} else if err := g.resolve(); err != nil {
		return err
	}
	token, err := g.token()
	if err != nil {
		return err
	}

	conn, err := dialGuest(ctx, g.addr, token)
	if err != nil {
		return err
	}
	conn.SetView(view)
	// Closing the connection ends this controller's session; it does not
	// stop the guest.
	defer conn.Close()

	var dir string
	var rec *runner.Record
	if cp != nil {
		dir = *resume
		if rec, err = runner.OpenRecord(dir); err != nil {
			return err
		}
		note := map[string]any{
			"step": cp.Step, "phase": cp.Phase, "requests_left": cp.MaxSteps - cp.Step + 1,
			"completed_calls": len(cp.Completed), "guest": g.addr, "api": apiEndpoint(),
			"view": *viewSize, "confirm": *confirm, "stream": *stream, "eager": *eager,
		}
		if cp.CallID != "" {
			note["call_id"] = cp.CallID
		}
		if uncertain != nil {
			note["reconciliation"] = answer
		}
		rec.Note("resume", note)
	} else {
		id := time.Now().Format("20060102-150405") + "-" + randhex.String(3)
		dir = filepath.Join(*recordDir, id)
		ld, err := ledgerDir(id)
		if err != nil {
			return err
		}
		if rec, err = runner.CreateRecord(dir); err != nil {
			return err
		}
		rec.Note("start", map[string]any{
			"run_id": id, "task": task, "model": *model, "mode": *mode, "guest": g.addr, "max_steps": *maxSteps, "api": apiEndpoint(),
			"context_images": budget.images, "context_bytes": budget.bytes,
			"view": *viewSize, "confirm": *confirm, "stream": *stream, "eager": *eager,
		})
		if led, err = ledger.Open(ld); err != nil {
			return err
		}
		defer led.Close()
	}
	fmt.Fprintf(stdout, "run record: %s\n", dir)
	var srv *console.Server
	if *withConsole {
		srv, err = console.Start(console.Config{RunsDir: *recordDir, CurrentRun: filepath.Base(dir),
			Guest: &console.Guest{Addr: g.addr, Token: token}})
		if err != nil {
			return err
		}
		defer srv.Close()
		printConsoleURL(stdout, srv)
	}

	crash, err := crashFromEnv()
	if err != nil {
		return err
	}
	approve := approver.ApproveSafetyChecks
	var before func(context.Context, runner.ActionInfo) (any, error)
	if *confirm {
		before = approver.ApproveAction
	}
	if srv != nil {
		ap := consoleApprovals(srv, approver, runner.IsTerminal(stdin), rec, stderr)
		approve = ap.SafetyChecks
		if *confirm {
			before = ap.BeforeAction
		}
	}
	show := progress{w: stdout}
	opts := runner.RunOptions{
		Model:    *model,
		Input:    task,
		MaxSteps: *maxSteps,
		CallOptions: runner.CallOptions{
			ApproveSafetyChecks: approve,
			BeforeAction:        before,
			OnEvent: func(e runner.Event) {
				rec.Event(e)
				show.event(e)
				crash.event(e)
			},
		},
		OnDiagnostic: rec.Diagnostic,
		Ledger:       crashLedger{led, crash},
		// Asked before the run started (reconcile above).
		Reconcile: func(context.Context, runner.Uncertain) (runner.Reconciliation, error) { return answer, nil },
	}
	budget.apply(&opts)
	if *stream {
		opts.Stream = streamText(stdout)
		opts.Stream.Eager = *eager
	}
	var res *runner.RunResult
	var runErr error
	switch *mode {
	case "code":
		res, runErr = runCode(ctx, conn, opts)
	case "browser":
		res, runErr = runBrowser(ctx, conn, origins, approver.Ask, opts)
	default:
		ts := runner.New(openai.NewClient(), conn)
		defer ts.Close()
		if cp != nil {
			res, runErr = ts.Resume(ctx, cp, opts)
		} else {
			res, runErr = ts.Run(ctx, opts)
		}
	}
	recErr := rec.Finish(res, runErr)
	if recErr != nil {
		fmt.Fprintf(stderr, "warning: the run record is incomplete: %v\n", recErr)
	}
	// The checkpoints hold typed text and the model's code: they stay only
	// while a resume may need them (a computer-mode run that failed).
	if runErr == nil || *mode != "computer" {
		led.Close()
		if err := os.RemoveAll(led.Dir()); err != nil {
			fmt.Fprintf(stderr, "warning: the run's checkpoints were not removed: %v\n", err)
		}
	}
	if srv != nil {
		// The open pages show how the run ended before the console closes.
		srv.End(outcome(ctx, res, runErr))
	}
	if runErr != nil {
		fmt.Fprintf(stdout, "run record: %s\n", dir)
		return printableError{explain(ctx, runErr)}
	}
	fmt.Fprintf(stdout, "\ndone in %d steps, %s, tokens: %s\n\n%s\n\nrun record: %s\n",
		res.Steps, res.Duration.Round(time.Millisecond), tokens(res.Usage), runner.Printable(res.FinalMessage), dir)
	return nil
}

// outcome is how the run ended, for the console's page.
func outcome(ctx context.Context, res *runner.RunResult, runErr error) console.Outcome {
	switch {
	case runErr == nil:
		return console.Outcome{Status: console.RunDone, Message: res.FinalMessage}
	case ctx.Err() != nil && errors.Is(runErr, ctx.Err()):
		return console.Outcome{Status: console.RunStopped, Error: explain(ctx, runErr).Error()}
	}
	return console.Outcome{Status: console.RunFailed, Error: explain(ctx, runErr).Error()}
}

// apiEndpoint names the Responses endpoint for the record, without any
// credentials a URL might carry.
func apiEndpoint() string {
	base := os.Getenv("OPENAI_BASE_URL")
	if base == "" {
		return "default (api.openai.com)"
	}
	u, err := url.Parse(base)
	if err != nil {
		return "unparsable OPENAI_BASE_URL"
	}
	u.User = nil
	u.RawQuery = ""
	return u.String()
}

// explain adds what a user needs to act on a failed run.
func explain(ctx context.Context, err error) error {
	var apiErr *openai.Error
	switch {
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return fmt.Errorf("cancelled: %w; an action already sent cannot be undone: check the desktop before retrying", err)
	case errors.Is(err, runner.ErrStepLimit):
		return fmt.Errorf("%w (raise --max-steps to allow more)", err)
	case errors.As(err, &apiErr) && apiErr.Message != "":
		return fmt.Errorf("%w: %s", err, apiErr.Message)
	}
	return err
}

// printableError shows an error that may carry text from the API or the
// model (ids, messages) without letting it drive the terminal.
type printableError struct{ error }

func (e printableError) Error() string { return runner.Printable(e.error.Error()) }
func (e printableError) Unwrap() error { return e.error }

func tokens(u runner.Totals) string {
	s := fmt.Sprintf("%d in, %d out, %d total", u.InputTokens, u.OutputTokens, u.TotalTokens)
	if u.Incomplete {
		s += " (incomplete: a response carried no usage)"
	}
	return s
}

// progress prints a run's events for a person watching.
type progress struct{ w io.Writer }

func (p progress) event(e runner.Event) {
	switch e.Kind {
	case runner.EventRequest:
		fmt.Fprintf(p.w, "step %d/%d: asking the model\n", e.Step, e.MaxSteps)
	case runner.EventResponse:
		what := "no local call"
		if len(e.CallIDs) > 0 {
			what = "calls " + runner.Printable(strings.Join(e.CallIDs, ", "))
		}
		fmt.Fprintf(p.w, "  answer in %s: %s\n", round(e.Duration), what)
	case runner.EventApprovalAnswered:
		verdict := "refused (" + e.Approval.Reason + ")"
		if e.Approval.Approved {
			verdict = "approved"
		}
		fmt.Fprintf(p.w, "  %s: %s\n", strings.ReplaceAll(e.Approval.Kind, "_", " "), verdict)
	case runner.EventAction:
		if e.Action.Error != "" {
			fmt.Fprintf(p.w, "  %-40s FAILED after %s: %s\n", runner.Printable(e.Action.Summary), round(e.Duration), runner.Printable(e.Action.Error))
			return
		}
		fmt.Fprintf(p.w, "  %-40s %s\n", runner.Printable(e.Action.Summary), round(e.Duration))
	case runner.EventCode:
		c := e.Code
		what := fmt.Sprintf("exec_py %d lines: %d B output, %d images", c.Lines, c.OutputBytes, c.Images)
		if c.Raised {
			what += ", raised"
		}
		if c.Lost {
			what += ", namespace lost (" + c.Stopped + ")"
		}
		fmt.Fprintf(p.w, "  %-40s %s\n", what, round(e.Duration))
	case runner.EventFunction:
		status := "done"
		if e.Function.Error != "" {
			status = "FAILED"
		}
		fmt.Fprintf(p.w, "  %-40s %s %s\n", "function "+runner.Printable(e.Function.Name), status, round(e.Duration))
	case runner.EventTakeover:
		tk := e.Takeover
		if tk.Phase == runner.TakeoverPaused {
			fmt.Fprintf(p.w, "  a person holds the desktop: paused, %d action(s) of the call not run\n", len(tk.NotRun))
			return
		}
		fmt.Fprintf(p.w, "  handed back by %s after %d action(s) of theirs\n", runner.Printable(strings.Join(tk.By, ", ")), len(tk.Actions)+tk.More)
	case runner.EventScreenshot:
		img := e.Screenshot.Transform.Image
		fmt.Fprintf(p.w, "  %-40s %s\n", fmt.Sprintf("screenshot %dx%d, %d KB", img.W, img.H, (e.Screenshot.Bytes+1023)/1024), round(e.Duration))
	}
}

func round(d runner.Duration) time.Duration {
	if time.Duration(d) < time.Millisecond {
		return time.Duration(d).Round(time.Microsecond)
	}
	return time.Duration(d).Round(time.Millisecond)
}

// freshGuest starts a guest with a browser and an editor on b for one
// 'agentctl run' ('--guest docker'), or takes one from a pool ('agentctl
// guest pool'), and points g at it; down removes it. started is the guest
// it started, nil for a pooled one.
func freshGuest(ctx context.Context, b backend.Backend, g *guestFlags, spec backend.Spec, out io.Writer) (down func(), started backend.Instance, err error) {
	spec.Desktop, spec.Progress = backend.BrowserAndEditor, guestProgress(out)
	if d, down, ok, err := claimPooled(ctx, b, spec, out); err != nil || ok {
		g.addr, g.tokenFile = d.Addr, d.TokenFile
		return down, nil, err
	}
	fmt.Fprintf(out, "starting a %s guest for this run\n", b.Name())
	inst, err := b.Up(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	d := inst.Describe()
	g.addr, g.tokenFile = d.Addr, d.TokenFile
	return func() {
		downCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := inst.Down(downCtx); err != nil {
			fmt.Fprintf(out, "warning: %v\n", err)
		}
	}, inst, nil
}
