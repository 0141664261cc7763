package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/console"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/session"
)

// guestConn is what run needs of a guest connection.
type guestConn interface {
	runner.Driver
	SetView(wire.View)
	Close() error
}

// dialGuest connects to agentd; tests replace it with a fake desktop.
var dialGuest = func(ctx context.Context, addr, token string, opts guest.DialOptions) (guestConn, error) {
	return guest.DialWith(ctx, addr, token, opts)
}

func runRun(ctx context.Context, args []string) error {
	return runCommand(ctx, args, os.Stdin, os.Stdout, os.Stderr)
}

func runCommand(ctx context.Context, args []string, stdin *os.File, stdout, stderr io.Writer) error {
	fs := flagSet("run", `usage: agentctl run --guest ADDR|NAME|docker [--token-file F] [--mode computer|code|browser [--allow-origin O]...] [--model M] [--max-steps N] [--view WxH] [--record-dir D] [--stream [--eager]] [--console] [--confirm] [--context-images N] [--context-bytes B] "task"
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
--view, --confirm, --stream, --eager, context budget and --allow-origin unless given. If it stopped
during an action, that action may or may not have run: it is shown with the
last screenshot and asked about on the terminal (or given with --reconcile);
it is never run again unless answered not-done.`)
	fs.SetOutput(stderr)
	var g guestFlags
	g.register(fs)
	var cfg session.Config
	cfg.RegisterFlags(fs)
	recordDir := fs.String("record-dir", "runs", "folder under which each run writes its record, <timestamp>-<id>/")
	network := fs.Bool("network", false, "with --guest docker: give the container a network (default none)")
	withConsole := fs.Bool("console", false, "serve the console for this run (the desktop live, the steps) and print its one-time URL")
	resume := fs.String("resume", "", "continue the run whose record is this folder (runs/<id>) from its last checkpoint, on --guest")
	reconcileFlag := fs.String("reconcile", "", "with --resume, when the run stopped during an action: done (its effects show on the desktop) or not-done (run it again); asked on the terminal when not given")
	backend.RegisterFlags(fs) // a backend's own settings: kubernetes' --namespace, ...
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Task = strings.TrimSpace(strings.Join(fs.Args(), " "))
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[strings.ReplaceAll(f.Name, "-", "_")] = true })
	given, err := session.ParseReconcile(*reconcileFlag)
	if err != nil {
		return err
	}
	if given != "" && *resume == "" {
		return errors.New("--reconcile is for --resume")
	}
	approver := runner.NewTerminalApprover(stdin, stderr)
	var s *session.Session
	var answer runner.Reconciliation
	if *resume != "" {
		if cfg.Task != "" {
			return errors.New("--resume continues the recorded task; give no task")
		}
		if s, err = session.Open(*resume); err != nil {
			return err
		}
		defer s.Close()
		cfg = s.Continue(cfg, func(name string) bool { return set[name] })
		if answer, err = s.Reconcile(ctx, given, approver.Ask, runner.IsTerminal(stdin), stdout); err != nil {
			return err
		}
	}
	if g.addr == "" {
		return errors.New("--guest is required (or $AGENTD_ADDR)")
	}
	if err := cfg.Check(); err != nil {
		return err
	}
	// The command line first, then the environment.
	if os.Getenv("OPENAI_API_KEY") == "" {
		return errors.New("OPENAI_API_KEY is not set (OPENAI_BASE_URL may point at another Responses-compatible server)")
	}
	fresh, err := backend.Get(g.addr)
	if err != nil && *network {
		return errors.New("--network is for --guest docker")
	}
	view, err := parseView(cfg.View, "", true)
	if err != nil {
		return err
	}
	if fresh != nil {
		down, _, err := freshGuest(ctx, fresh, &g, backend.Spec{Network: *network, Code: cfg.Mode == session.Code}, stdout)
		if err != nil {
			return err
		}
		defer down()
	} else if err := g.resolve(ctx); err != nil {
		return err
	}
	token, err := g.token()
	if err != nil {
		return err
	}

	conn, err := dialGuest(ctx, g.addr, token, g.options())
	if err != nil {
		return err
	}
	conn.SetView(view)
	// Closing the connection ends this controller's session; it does not
	// stop the guest.
	defer conn.Close()

	cfg.Guest, cfg.API = g.addr, session.APIEndpoint()
	if s != nil {
		s.Resume(cfg, answer)
	} else {
		if s, err = session.New(*recordDir, cfg); err != nil {
			return err
		}
		defer s.Close()
	}
	fmt.Fprintf(stdout, "run record: %s\n", s.Dir)
	var srv *console.Server
	if *withConsole {
		srv, err = console.Start(console.Config{RunsDir: filepath.Dir(s.Dir), CurrentRun: filepath.Base(s.Dir),
			Guest: &console.Guest{Addr: g.addr, Token: token, Dial: g.reach}})
		if err != nil {
			return err
		}
		defer srv.Close()
		printConsoleURL(stdout, srv)
	}
	opts := runner.RunOptions{Stream: session.StreamText(stdout), OnEvent: session.Progress(stdout)}
	calls := runner.CallOptions{ApproveSafetyChecks: approver.ApproveSafetyChecks}
	if cfg.Confirm {
		calls.BeforeAction = approver.ApproveAction
	}
	if srv != nil {
		ap := consoleApprovals(srv, approver, runner.IsTerminal(stdin), s.Record, stderr)
		calls.ApproveSafetyChecks = ap.SafetyChecks
		if cfg.Confirm {
			calls.BeforeAction = ap.BeforeAction
		}
	}
	var res *runner.RunResult
	loop, runErr := s.Loop(ctx, openai.NewClient(), conn, approver.Ask, calls)
	if runErr == nil {
		res, runErr = s.Run(ctx, loop, opts)
	}
	if err := s.Finish(res, runErr, func(err error) { fmt.Fprintf(stderr, "warning: %v\n", err) }); err != nil {
		fmt.Fprintf(stderr, "warning: the run record is incomplete: %v\n", err)
	}
	if srv != nil {
		// The open pages show how the run ended before the console closes.
		srv.End(outcome(ctx, res, runErr))
	}
	if runErr != nil {
		fmt.Fprintf(stdout, "run record: %s\n", s.Dir)
		return printableError{session.Explain(ctx, runErr)}
	}
	fmt.Fprintf(stdout, "\ndone in %d steps, %s, tokens: %s\n\n%s\n\nrun record: %s\n",
		res.Steps, res.Duration.Round(time.Millisecond), session.Tokens(res.Usage), runner.Printable(res.FinalMessage), s.Dir)
	return nil
}

// outcome is how the run ended, for the console's page.
func outcome(ctx context.Context, res *runner.RunResult, runErr error) console.Outcome {
	switch {
	case runErr == nil:
		return console.Outcome{Status: console.RunDone, Message: res.FinalMessage}
	case ctx.Err() != nil && errors.Is(runErr, ctx.Err()):
		return console.Outcome{Status: console.RunStopped, Error: session.Explain(ctx, runErr).Error()}
	}
	return console.Outcome{Status: console.RunFailed, Error: session.Explain(ctx, runErr).Error()}
}

// printableError shows an error that may carry text from the API or the
// model (ids, messages) without letting it drive the terminal.
type printableError struct{ error }

func (e printableError) Error() string { return runner.Printable(e.error.Error()) }
func (e printableError) Unwrap() error { return e.error }

// freshGuest starts a guest with a browser and an editor on b for one
// 'agentctl run' ('--guest docker'), or takes one from a pool ('agentctl
// guest pool'), and points g at it; down removes it. started is the guest
// it started, nil for a pooled one.
func freshGuest(ctx context.Context, b backend.Backend, g *guestFlags, spec backend.Spec, out io.Writer) (down func(), started backend.Instance, err error) {
	spec.Desktop, spec.Progress = backend.BrowserAndEditor, backend.Progress(out)
	inst, started, down, err := backend.Fresh(ctx, b, spec, out)
	if err != nil {
		return nil, nil, err
	}
	g.from(inst)
	return down, started, nil
}
