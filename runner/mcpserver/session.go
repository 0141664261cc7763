package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/scaling"
)

// session is one MCP session: its own controller connection to the guest
// (opened at the first call), its toolset and its run record. One call
// runs at a time; a concurrent one is refused, never queued.
type session struct {
	srv *Server
	ss  *mcp.ServerSession
	id  string

	// calls is held by the call in progress (a one-slot channel, so a new
	// call can wait for a cancelled one to wind down); cur is its context.
	calls chan struct{}
	curMu sync.Mutex
	cur   context.Context
	asks  map[string][32]byte // elicitations issued: nonce → the call's digest (under curMu)

	// The fields below belong to the call holding calls.
	desk  *Desktop
	ts    *runner.Toolset
	image scaling.Size // the image space of the last screenshot sent
	held  bool         // the last call was refused: a person held the desktop
	seen  uint64       // the take overs agentd had told of at the last call
	step  int          // calls so far, the record's step numbers
	execs int          // exec_py calls so far
	bts   *browser.BrowserToolset
	// consent answers the browser toolset's consent for the call in
	// progress; urlRefused is the origin its URL policy refused, and
	// refusedWhy why its consent was refused.
	consent    func(context.Context, browser.ConsentRequest) (any, error)
	urlRefused string
	refusedWhy string
	rec        *journal // the run record, written off the answer path

	endOnce sync.Once
	ended   bool // under calls
}

// begin claims the session for one call: false when another call of the
// session is running (never queued) or the session has ended. A call that
// was cancelled is winding down (agentd confirms what ran and releases
// keys and buttons): the new call waits for that, bounded by its context.
func (x *session) begin(ctx context.Context) (ok bool, why string) {
	busy := "busy: another call of this MCP session is running (calls are refused, never queued)"
	select {
	case x.calls <- struct{}{}:
	default:
		x.curMu.Lock()
		cur := x.cur
		x.curMu.Unlock()
		if cur == nil || cur.Err() == nil {
			return false, busy
		}
		select {
		case x.calls <- struct{}{}:
		case <-ctx.Done():
			return false, "cancelled while the call cancelled before it was winding down"
		}
	}
	if x.ended {
		<-x.calls
		return false, "the session has ended"
	}
	if x.rec != nil {
		// The calls before this one are on disk before it starts.
		x.rec.wait()
	}
	x.curMu.Lock()
	x.cur = ctx
	x.curMu.Unlock()
	return true, ""
}

// runCall runs body as one call of the session, under callID: the
// session claimed (begin), connected to its guest at its first call, the
// call's step started in the record, and no take over to tell of first
// (takeoverCheck, told of steps, what the call would run).
func (x *session) runCall(ctx context.Context, steps []string, body func(callID string) *mcp.CallToolResult) *mcp.CallToolResult {
	if ok, why := x.begin(ctx); !ok {
		return errorResult(why)
	}
	defer x.finish()
	if err := x.open(ctx); err != nil {
		return openFailure(err)
	}
	callID := fmt.Sprintf("mcp_%s_%d", x.id, x.step+1)
	x.newStep(callID)
	if res := x.takeoverCheck(ctx, callID, steps); res != nil {
		return res
	}
	return body(callID)
}

// finish ends the call begin claimed the session for.
func (x *session) finish() {
	x.curMu.Lock()
	x.cur = nil
	x.curMu.Unlock()
	<-x.calls
}

// open connects the session to its guest at its first call: the view is
// set and a screenshot taken in it, so agentd maps the first coordinates
// in the view's image space (a new agentd session maps them in screen
// pixels until its first screenshot in a view).
func (x *session) open(ctx context.Context) error {
	if x.desk != nil {
		return nil
	}
	d, err := x.srv.cfg.Open(ctx)
	if err != nil {
		return err
	}
	d.Client.SetView(x.srv.cfg.View)
	shot, err := d.Client.Screenshot(ctx)
	if err != nil {
		d.Close()
		return fmt.Errorf("the first screenshot in the view: %w", err)
	}
	x.desk = d
	if slices.Contains(x.srv.cfg.Tools, ToolsBrowser) {
		if err := x.openBrowser(ctx); err != nil {
			x.desk = nil
			d.Close()
			return err
		}
	}
	x.image = shot.Transform.Image
	// No Responses request is ever made: Execute runs single calls.
	x.ts = runner.New(openai.Client{}, d.Client, runner.WithName("mcp"))
	if x.srv.cfg.RecordDir != "" {
		dir := x.srv.recordDir()
		rec, err := runner.CreateRecord(dir)
		if err != nil {
			x.srv.logf("warning: no run record for this session: %v", err)
		} else {
			client := "an MCP client"
			if p := x.ss.InitializeParams(); p != nil && p.ClientInfo != nil {
				client = p.ClientInfo.Name + " " + p.ClientInfo.Version
			}
			rec.Note("start", map[string]any{"task": "MCP session of " + client, "model": client, "mode": "mcp",
				"guest": d.Addr, "tools": x.srv.cfg.Tools, "view": x.srv.cfg.View, "allow_origins": x.srv.cfg.Origins})
			x.rec = newJournal(rec)
			if f := x.srv.cfg.OnRecord; f != nil {
				f(dir)
			}
		}
	}
	x.srv.logf("session %s: connected to %s", x.id, d.Addr)
	return nil
}

// event records e as part of the current call's step.
func (x *session) event(e runner.Event) {
	if x.rec == nil {
		return
	}
	e.Step = x.step
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	x.rec.add(e)
}

// newStep starts a call's step in the record.
func (x *session) newStep(callID string) {
	x.step++
	x.event(runner.Event{Kind: runner.EventRequest, CallIDs: []string{callID}})
}

// end releases the guest (taking a fresh one down) and finishes the
// record. It waits for a call in progress: its context ends with the
// session's.
func (x *session) end() {
	x.endOnce.Do(func() {
		x.calls <- struct{}{}
		defer func() { <-x.calls }()
		x.ended = true
		x.srv.images.drop(x)
		if x.ts != nil {
			x.ts.Close()
		}
		if x.bts != nil {
			_ = x.bts.Close()
		}
		if x.rec != nil {
			if err := x.rec.finish(&runner.RunResult{Steps: x.step, FinalMessage: "the MCP session ended"}); err != nil {
				x.srv.logf("warning: the run record is incomplete: %v", err)
			}
		}
		if x.desk != nil {
			x.desk.Close()
			x.srv.logf("session %s: released %s", x.id, x.desk.Addr)
		}
	})
}

// progress sends progress notifications for a call that asked for them
// (a progress token): one per completed step, and a heartbeat every
// second while the call runs, so a long wait or exec_py shows it is alive.
type progress struct {
	ss    *mcp.ServerSession
	token any
	total float64

	mu   sync.Mutex
	n    float64
	stop chan struct{}
	done chan struct{}
}

func startProgress(ctx context.Context, req *mcp.CallToolRequest, total int) *progress {
	p := &progress{ss: req.Session, token: req.Params.GetProgressToken(), total: float64(total)}
	if p.token == nil {
		return p
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	start := time.Now()
	// The heartbeat's owner is the call: stopProgress ends it.
	go func() {
		defer close(p.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				p.send(ctx, 0, fmt.Sprintf("running for %ds", int(time.Since(start).Seconds())))
			}
		}
	}()
	return p
}

// step reports a completed step.
func (p *progress) step(ctx context.Context, msg string) { p.send(ctx, 1, msg) }

func (p *progress) send(ctx context.Context, add float64, msg string) {
	if p.token == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += add
	_ = p.ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.n, Total: p.total, Message: msg})
}

func (p *progress) end() {
	if p.token == nil {
		return
	}
	close(p.stop)
	<-p.done
}

// failure is a call's error as the client reads it.
func failure(ctx context.Context, err error) string {
	var bad *runner.BadInputError
	var refused *runner.ApprovalError
	switch {
	case errors.As(err, &bad):
		return "invalid input, nothing was performed: " + bad.Err.Error() + actionAt(bad.Index)
	case errors.As(err, &refused):
		why := refused.Reason
		if refused.Err != nil {
			why += ": " + refused.Err.Error()
		}
		return fmt.Sprintf("not approved: %s was refused (%s); nothing from it on was performed", refused.Subject, why)
	case ctx.Err() != nil:
		return "cancelled: keys and buttons were released; actions already performed cannot be undone, take a screenshot: " + err.Error()
	}
	return err.Error()
}

func actionAt(i int) string {
	if i < 0 {
		return ""
	}
	return fmt.Sprintf(" (action %d)", i)
}

// openFailure is a call's answer when the session could not get its desktop.
func openFailure(err error) *mcp.CallToolResult {
	if errors.Is(err, computer.ErrTakenOver) {
		return errorResult(heldText + "; nothing ran. Call again after the person hands it back.")
	}
	return errorResult("no desktop for this session: " + err.Error())
}
