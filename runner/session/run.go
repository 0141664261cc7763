package session

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/openai/openai-go/v3"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/actions/browserrpc"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/runner"
	browsertool "github.com/agentd-dev/agentd/runner/browser"
	"github.com/agentd-dev/agentd/runner/codetool"
)

// Loop is the runner a session drives (Session.Loop): the computer toolset
// with its calls' options, or a *runner.Runner with its mode's tools.
type Loop interface {
	Run(ctx context.Context, opts runner.RunOptions) (*runner.RunResult, error)
	Resume(ctx context.Context, cp *runner.Checkpoint, opts runner.RunOptions) (*runner.RunResult, error)
}

// Run runs the session's task with loop, or resumes the run from its
// checkpoint, the uncertain call reconciled as Resume noted. The model, the
// task, the request and context budgets and streaming are the session's
// Config; opts carries the caller's observers (opts.Stream
// only when Config.Stream). Each event is recorded before opts.OnEvent
// sees it, each request's diagnostic too, and every checkpoint is kept.
// AGENTD_CRASH_AT makes the process kill itself at a boundary of the run
// (CrashEnv).
func (s *Session) Run(ctx context.Context, loop Loop, opts runner.RunOptions) (*runner.RunResult, error) {
	crash, err := crashFromEnv()
	if err != nil {
		return nil, err
	}
	c := s.Config
	opts.Model, opts.Input, opts.MaxSteps = c.Model, c.Task, c.MaxSteps
	if c.ContextImages != 0 || c.ContextBytes != 0 {
		opts.Store = openai.Bool(false)
		opts.ContextBudget = &runner.ContextBudget{MaxImages: c.ContextImages, MaxInputBytes: c.ContextBytes}
	}
	if !c.Stream {
		opts.Stream = nil
	} else {
		st := runner.Streaming{}
		if opts.Stream != nil {
			st = *opts.Stream
		}
		st.Eager = c.Eager
		opts.Stream = &st
	}
	show := opts.OnEvent
	opts.OnEvent = func(e runner.Event) {
		s.Record.Event(e)
		if show != nil {
			show(e)
		}
		crash.event(e)
	}
	opts.OnDiagnostic = s.Record.Diagnostic
	opts.Ledger = crashLedger{s.ledger, crash}
	if s.Checkpoint == nil {
		return loop.Run(ctx, opts)
	}
	answer := s.answer
	opts.Reconcile = func(context.Context, runner.Uncertain) (runner.Reconciliation, error) { return answer, nil }
	return loop.Resume(ctx, s.Checkpoint, opts)
}

// Asker asks a person a yes/no question (runner.TerminalApprover.Ask).
type Asker func(ctx context.Context, question string) (bool, error)

// codeConn is what code mode needs of a guest connection (*guest.Client).
type codeConn interface {
	codetool.Runner
	Hello() wire.Hello
	Screenshot(ctx context.Context) (guest.Screenshot, error)
}

// browserConn is what browser mode needs of a guest connection.
type browserConn interface {
	Browser() (*browserrpc.Driver, error)
}

// Loop returns the runner of the session's mode over conn, the guest's
// connection (*guest.Client, its view set): the computer toolset, its calls
// governed by calls (approvals; the other modes have none of it); in code
// mode the code tool, the model's code run in the guest's worker (agentd
// --code) in the coordinates of conn's view; in browser mode the browser
// toolset on the guest's Chromium (agentd --browser), navigation limited
// to Config.AllowOrigins (checked on the host for navigate's URL, enforced
// by the guest's browser for every load) and every call that changes the
// page asked of ask.
func (s *Session) Loop(ctx context.Context, client openai.Client, conn runner.Driver, ask Asker, calls runner.CallOptions) (Loop, error) {
	switch s.Config.Mode {
	case Computer, "":
		return computerLoop{runner.New(client, conn), calls}, nil
	case Code:
		tool, err := codeTool(ctx, conn, s.Resuming())
		if err != nil {
			return nil, err
		}
		return withTools{runner.NewRunner(client), []runner.Tool{tool}}, nil
	case Browser:
		tool, err := browserTool(ctx, conn, s.Config.AllowOrigins, ask)
		if err != nil {
			return nil, err
		}
		return withTools{runner.NewRunner(client), []runner.Tool{tool}}, nil
	}
	return nil, fmt.Errorf("mode %q: use computer, code or browser", s.Config.Mode)
}

// computerLoop is the computer toolset whose calls calls govern.
type computerLoop struct {
	ts    *runner.Toolset
	calls runner.CallOptions
}

func (c computerLoop) Run(ctx context.Context, opts runner.RunOptions) (*runner.RunResult, error) {
	return c.ts.Run(ctx, opts, c.calls)
}

func (c computerLoop) Resume(ctx context.Context, cp *runner.Checkpoint, opts runner.RunOptions) (*runner.RunResult, error) {
	return c.ts.Resume(ctx, cp, opts, c.calls)
}

// withTools is a Runner whose runs have tools.
type withTools struct {
	r     *runner.Runner
	tools []runner.Tool
}

func (w withTools) Run(ctx context.Context, opts runner.RunOptions) (*runner.RunResult, error) {
	opts.Tools = append(slices.Clip(opts.Tools), w.tools...)
	return w.r.Run(ctx, opts)
}

func (w withTools) Resume(ctx context.Context, cp *runner.Checkpoint, opts runner.RunOptions) (*runner.RunResult, error) {
	opts.Tools = append(slices.Clip(opts.Tools), w.tools...)
	return w.r.Resume(ctx, cp, opts)
}

func codeTool(ctx context.Context, conn runner.Driver, resumed bool) (runner.Tool, error) {
	cc, ok := conn.(codeConn)
	if !ok {
		return nil, errors.New("code mode needs a connection to agentd")
	}
	if !slices.Contains(cc.Hello().Capabilities, "exec") {
		return nil, errors.New("the guest's agentd runs without --code: start the guest with 'agentctl guest up --code'")
	}
	// The view reaches agentd with a screenshot; code then sees the screen
	// as the model would in computer mode.
	if _, err := cc.Screenshot(ctx); err != nil {
		return nil, fmt.Errorf("set the view: %w", err)
	}
	return codetool.New(cc, codetool.Options{Resumed: resumed}), nil
}

func browserTool(ctx context.Context, conn runner.Driver, origins []string, ask Asker) (runner.Tool, error) {
	bc, ok := conn.(browserConn)
	if !ok {
		return nil, errors.New("browser mode needs a connection to agentd")
	}
	d, err := bc.Browser()
	if err != nil {
		return nil, fmt.Errorf("%w; start the guest with 'agentctl guest up --browser'", err)
	}
	ts, err := BrowserToolset(d, origins, ask)
	if err != nil {
		return nil, err
	}
	// The URL policy sees navigate's URL only; the guest's browser refuses
	// every other load (redirects, scripts, links, forms, pop-ups) too.
	if err := d.SetAllowedOrigins(ctx, origins); err != nil {
		return nil, fmt.Errorf("the guest's browser cannot enforce --allow-origin (is its agentd older than agentctl?): %w", err)
	}
	return browsertool.NewTool(ts), nil
}

// BrowserToolset is the default members over d, navigation limited to
// origins, each change confirmed by ask.
func BrowserToolset(d browser.Driver, origins []string, ask Asker) (*browser.BrowserToolset, error) {
	if len(origins) == 0 {
		return nil, errors.New("browser mode needs --allow-origin (for example https://example.com): the model may navigate only there")
	}
	policy, err := browser.AllowOrigins(origins...)
	if err != nil {
		return nil, err
	}
	confirm := func(ctx context.Context, req browser.ConsentRequest) (any, error) {
		return ask(ctx, ConsentQuestion(req))
	}
	return browser.New(d, browser.WithConfirm(confirm), browser.WithURLPolicy(policy))
}

// ConsentQuestion says what the model asks to do and where; typed text
// and a script's source by their length only (ConsentRequest.Summary).
func ConsentQuestion(req browser.ConsentRequest) string {
	return fmt.Sprintf("\nThe model asks for browser %s on %s.\nApprove? [y/N] ", req.Summary(), req.Where())
}
