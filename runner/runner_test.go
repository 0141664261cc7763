package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/scaling"
	"github.com/agentd-dev/agentd/tools/respserver"
)

func TestRunHappyPath(t *testing.T) {
	ts, srv, d := setup(t,
		respserver.Call(shot),
		respserver.Turn{
			Actions:     respserver.Call(`{"type":"click","x":10,"y":20,"button":"left"}`, `{"type":"type","text":"secret words"}`, `{"type":"keypress","keys":["ctrl","s"]}`).Actions,
			ExpectImage: scaling.Size{W: 64, H: 40},
		},
		respserver.Turn{Message: "Saved the file.", ExpectImage: scaling.Size{W: 64, H: 40}},
	)
	var events []Event
	o := opts()
	o.OnEvent = func(e Event) { events = append(events, e) }
	o.Instructions = "be careful"
	res, err := ts.Run(context.Background(), o, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	if res.FinalMessage != "Saved the file." || res.Steps != 3 {
		t.Fatalf("result = %+v", res)
	}
	want := []string{"screenshot", "click", "type", "keypress", "screenshot"}
	if got := d.kinds(); !slices.Equal(got, want) {
		t.Fatalf("driver calls = %v, want %v", got, want)
	}
	if len(res.CompletedCallIDs) != 2 {
		t.Fatalf("completed = %v", res.CompletedCallIDs)
	}
	// Usage: input 100+110+120, output 3×20.
	if u := res.Usage; u.InputTokens != 330 || u.OutputTokens != 60 || u.TotalTokens != 390 || u.Incomplete || u.Requests != 3 {
		t.Fatalf("usage = %+v", u)
	}
	// Every request repeats the instructions and the tool.
	for _, r := range srv.Requests() {
		var body struct {
			Instructions string `json:"instructions"`
		}
		_ = json.Unmarshal(r.Body, &body)
		if body.Instructions != "be careful" {
			t.Fatalf("request for turn %d lost the instructions", r.Turn)
		}
	}
	var kinds []EventKind
	for _, e := range events {
		kinds = append(kinds, e.Kind)
		if e.Action != nil && strings.Contains(e.Action.Summary, "secret") {
			t.Fatal("an action summary contains typed text")
		}
	}
	wantKinds := []EventKind{EventRequest, EventResponse, EventScreenshot,
		EventRequest, EventResponse, EventAction, EventAction, EventAction, EventScreenshot,
		EventRequest, EventResponse, EventFinal}
	if !slices.Equal(kinds, wantKinds) {
		t.Fatalf("events = %v\nwant %v", kinds, wantKinds)
	}
	if events[0].Step != 1 || events[0].MaxSteps != DefaultMaxSteps {
		t.Fatalf("first event step %d/%d", events[0].Step, events[0].MaxSteps)
	}
}

func TestScreenshotOnlyCallTakesOneScreenshot(t *testing.T) {
	ts, srv, d := setup(t, respserver.Call(shot), respserver.Final("done"))
	var infos []ActionInfo
	o, calls := opts(), CallOptions{BeforeAction: func(_ context.Context, a ActionInfo) (any, error) {
		infos = append(infos, a)
		return true, nil
	}}
	if _, err := ts.Run(context.Background(), o, calls); err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	if got := d.kinds(); !slices.Equal(got, []string{"screenshot"}) {
		t.Fatalf("driver calls = %v", got)
	}
	if len(infos) != 1 || !infos[0].IsFinalScreenshot || infos[0].Index != 0 {
		t.Fatalf("before_action infos = %+v", infos)
	}
}

type namedBool bool

func TestSafetyCheckApprovals(t *testing.T) {
	checks := []respserver.SafetyCheck{{ID: "cu_sc_1", Code: "malicious_instructions", Message: "The screen asks for \x1b[31mcredentials"}}
	cases := []struct {
		name    string
		approve func(ctx context.Context, call CallInfo, checks []SafetyCheck) (any, error)
		ok      bool
		reason  string
	}{
		{"exact true", func(context.Context, CallInfo, []SafetyCheck) (any, error) { return true, nil }, true, ""},
		{"false", func(context.Context, CallInfo, []SafetyCheck) (any, error) { return false, nil }, false, "refused"},
		{"missing", nil, false, "no approve_safety_checks callback"},
		{"error", func(context.Context, CallInfo, []SafetyCheck) (any, error) { return true, errors.New("ui gone") }, false, "callback failed"},
		{"string true", func(context.Context, CallInfo, []SafetyCheck) (any, error) { return "true", nil }, false, "a string, not exactly true"},
		{"int 1", func(context.Context, CallInfo, []SafetyCheck) (any, error) { return 1, nil }, false, "a int, not exactly true"},
		{"named bool", func(context.Context, CallInfo, []SafetyCheck) (any, error) { return namedBool(true), nil }, false, "not exactly true"},
		{"nil", func(context.Context, CallInfo, []SafetyCheck) (any, error) { return nil, nil }, false, "nil"},
		{"panic", func(context.Context, CallInfo, []SafetyCheck) (any, error) { panic("boom") }, false, "panicked"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, srv, d := setup(t,
				respserver.Call(shot),
				respserver.Turn{Actions: respserver.Call(`{"type":"click","x":1,"y":2}`).Actions, SafetyChecks: checks},
				respserver.Final("done"))
			var seen []SafetyCheck
			var cb CallOptions
			if tc.approve != nil {
				cb.ApproveSafetyChecks = func(ctx context.Context, call CallInfo, c []SafetyCheck) (any, error) {
					seen = c
					if len(call.Actions) != 1 || call.CallID == "" || call.ResponseID == "" {
						t.Errorf("call info = %+v", call)
					}
					return tc.approve(ctx, call, c)
				}
			}
			_, err := ts.Run(context.Background(), opts(), cb)
			noViolations(t, srv) // acknowledged checks match the pending ones
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				if got := d.kinds(); !slices.Equal(got, []string{"screenshot", "click", "screenshot"}) {
					t.Fatalf("driver calls = %v", got)
				}
				if len(seen) != 1 || seen[0].ID != "cu_sc_1" || seen[0].Code != "malicious_instructions" {
					t.Fatalf("checks seen = %+v", seen)
				}
				return
			}
			var ae *ApprovalError
			if !errors.As(err, &ae) || !errors.Is(err, ErrNotApproved) || ae.Kind != ApprovalSafetyChecks {
				t.Fatalf("err = %v, want an ApprovalError", err)
			}
			if !strings.Contains(ae.Reason, tc.reason) || !strings.Contains(err.Error(), "cu_sc_1") {
				t.Fatalf("reason = %q (err %v), want %q", ae.Reason, err, tc.reason)
			}
			// Nothing of the refused call ran: only the first screenshot.
			if got := d.kinds(); !slices.Equal(got, []string{"screenshot"}) {
				t.Fatalf("driver calls = %v", got)
			}
			if srv.Served() != 2 {
				t.Fatalf("served %d turns, want 2 (no answer to the refused call)", srv.Served())
			}
			var re *RunError
			if !errors.As(err, &re) || len(re.AttemptedCallIDs) != 1 || len(re.CompletedCallIDs) != 1 {
				t.Fatalf("run error = %#v", re)
			}
		})
	}
}

func TestBeforeActionRefusalMidBatch(t *testing.T) {
	ts, srv, d := setup(t,
		respserver.Call(shot),
		respserver.Call(`{"type":"move","x":5,"y":5}`, `{"type":"click","x":6,"y":6}`, `{"type":"type","text":"x"}`),
		respserver.Final("done"))
	var asked []ActionInfo
	o, calls := opts(), CallOptions{BeforeAction: func(_ context.Context, a ActionInfo) (any, error) {
		asked = append(asked, a)
		return a.Action.Type != "click", nil
	}}
	_, err := ts.Run(context.Background(), o, calls)
	noViolations(t, srv)
	var ae *ApprovalError
	if !errors.As(err, &ae) || ae.Kind != ApprovalBeforeAction || ae.Index != 1 || ae.Reason != "refused" {
		t.Fatalf("err = %v", err)
	}
	if got := d.kinds(); !slices.Equal(got, []string{"screenshot", "move"}) {
		t.Fatalf("driver calls = %v (later actions and the final screenshot must not run)", got)
	}
	var re *RunError
	errors.As(err, &re)
	if len(re.AttemptedCallIDs) != 2 || len(re.CompletedCallIDs) != 1 || re.AttemptedCallIDs[1] == re.CompletedCallIDs[0] {
		t.Fatalf("attempted %v completed %v", re.AttemptedCallIDs, re.CompletedCallIDs)
	}
	// Asked: final screenshot of call 1, then move, click of call 2.
	if len(asked) != 3 || !asked[0].IsFinalScreenshot || asked[1].Index != 0 || asked[2].Index != 1 {
		t.Fatalf("asked = %+v", asked)
	}
}

func TestBeforeActionRefusesFinalScreenshot(t *testing.T) {
	ts, srv, d := setup(t, respserver.Call(shot), respserver.Call(`{"type":"wait"}`), respserver.Final("done"))
	o, calls := opts(), CallOptions{BeforeAction: func(_ context.Context, a ActionInfo) (any, error) {
		if a.IsFinalScreenshot && a.Index == 1 {
			return false, nil
		}
		return true, nil
	}}
	_, err := ts.Run(context.Background(), o, calls)
	noViolations(t, srv)
	var ae *ApprovalError
	if !errors.As(err, &ae) || ae.Index != 1 || ae.Subject != "final screenshot" {
		t.Fatalf("err = %v", err)
	}
	if got := d.kinds(); !slices.Equal(got, []string{"screenshot", "wait"}) {
		t.Fatalf("driver calls = %v", got)
	}
}

func TestMaxSteps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxSteps int
		want     int // requests
	}{{"default", 0, DefaultMaxSteps}, {"custom", 3, 3}, {"one", 1, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			var turns []respserver.Turn
			for range DefaultMaxSteps + 2 {
				turns = append(turns, respserver.Call(shot))
			}
			ts, srv, d := setup(t, turns...)
			o := opts()
			o.MaxSteps = tc.maxSteps
			_, err := ts.Run(context.Background(), o, CallOptions{})
			noViolations(t, srv)
			if !errors.Is(err, ErrStepLimit) {
				t.Fatalf("err = %v, want step limit", err)
			}
			reqs := srv.Requests()
			if len(reqs) != tc.want {
				t.Fatalf("%d requests, want %d", len(reqs), tc.want)
			}
			last := reqs[len(reqs)-1].ResponseID
			if !strings.Contains(err.Error(), "step limit reached") || !strings.Contains(err.Error(), last) || !strings.Contains(err.Error(), "call_") {
				t.Fatalf("err %q does not name the last result %s", err, last)
			}
			// The last allowed request starts no effects.
			if n := len(d.Calls()); n != tc.want-1 {
				t.Fatalf("%d driver calls, want %d", n, tc.want-1)
			}
			var re *RunError
			if !errors.As(err, &re) || re.ResponseID != last || re.Steps != tc.want {
				t.Fatalf("run error = %+v", re)
			}
		})
	}
}

// blockingSetup is a run that blocks inside a type action until the gate
// opens or the context ends.
func blockingSetup(t *testing.T) (*Toolset, *respserver.Server, *fakeDriver) {
	ts, srv, d := setup(t,
		respserver.Call(shot),
		respserver.Call(`{"type":"click","x":1,"y":1}`, `{"type":"type","text":"a long text"}`, `{"type":"keypress","keys":["Return"]}`),
		respserver.Final("done"))
	d.gate = make(chan struct{})
	return ts, srv, d
}

// runBlocked starts a run of ts in the background and returns once the run
// types on d, where blockingSetup's driver holds it; the run's error
// arrives on the channel.
func runBlocked(ctx context.Context, ts *Toolset, d *fakeDriver) <-chan error {
	done := make(chan error, 1)
	go func() { _, err := ts.Run(ctx, opts(), CallOptions{}); done <- err }()
	<-d.started
	return done
}

func TestBusy(t *testing.T) {
	ts, _, d := blockingSetup(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := runBlocked(ctx, ts, d)

	start := time.Now()
	_, err := ts.Run(context.Background(), opts(), CallOptions{})
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("second Run: %v, want busy", err)
	}
	_, err = ts.Execute(context.Background(), responses.ResponseComputerToolCall{}, CallOptions{}, nil)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("concurrent Execute: %v, want busy", err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("busy was not immediate")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v", err)
	}
}

func TestBusyConcurrentExecute(t *testing.T) {
	d := newFakeDriver(t, 64, 40)
	d.gate = make(chan struct{})
	ts := New(openai.NewClient(), computer.Sequential(d))
	ts.image = d.size
	call := decodeCall(t, `{"type":"computer_call","id":"cu_1","call_id":"call_1","status":"completed","pending_safety_checks":[],
		"actions":[{"type":"type","text":"hello"}]}`)
	done := make(chan error, 1)
	go func() { _, err := ts.Execute(context.Background(), call, CallOptions{}, nil); done <- err }()
	<-d.started
	if _, err := ts.Execute(context.Background(), call, CallOptions{}, nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("concurrent Execute: %v, want busy", err)
	}
	close(d.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestCloseWhileRunning(t *testing.T) {
	ts, srv, d := blockingSetup(t)
	done := runBlocked(context.Background(), ts, d)
	if s := ts.Status(); s != StatusOpen {
		t.Fatalf("status %s while running, want open", s)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	if s := ts.Status(); s != StatusDraining {
		t.Fatalf("status %s after Close during a run, want draining", s)
	}
	if _, err := ts.Run(context.Background(), opts(), CallOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Close: %v", err)
	}
	// Close does not cancel: the run finishes its work.
	close(d.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	if s := ts.Status(); s != StatusClosed {
		t.Fatalf("status %s after the run, want closed", s)
	}
}

func TestCancelDuringType(t *testing.T) {
	ts, srv, d := blockingSetup(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := runBlocked(ctx, ts, d)
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	var re *RunError
	if !errors.As(err, &re) {
		t.Fatalf("err %T is not a RunError", err)
	}
	if len(re.AttemptedCallIDs) != 2 || len(re.CompletedCallIDs) != 1 {
		t.Fatalf("attempted %v completed %v", re.AttemptedCallIDs, re.CompletedCallIDs)
	}
	calls := d.Calls()
	if got := d.kinds(); !slices.Equal(got, []string{"screenshot", "click", "type"}) {
		t.Fatalf("driver calls = %v (the keypress must not run)", got)
	}
	if !errors.Is(calls[2].Err, context.Canceled) {
		t.Fatalf("the type action did not see the cancellation: %v", calls[2].Err)
	}
	if srv.Served() != 2 || len(srv.Requests()) != 2 {
		t.Fatal("a request was sent after the cancellation")
	}
	if ts.Status() != StatusOpen {
		t.Fatal("the toolset was not released")
	}
}

func TestCancelDuringApproval(t *testing.T) {
	ts, srv, d := setup(t,
		respserver.Call(shot),
		respserver.Turn{Actions: respserver.Call(`{"type":"click","x":1,"y":2}`).Actions, SafetyChecks: []respserver.SafetyCheck{{ID: "sc_1"}}},
		respserver.Final("done"))
	ctx, cancel := context.WithCancel(context.Background())
	asking := make(chan struct{})
	var returned atomic.Bool
	o, calls := opts(), CallOptions{ApproveSafetyChecks: func(ctx context.Context, _ CallInfo, _ []SafetyCheck) (any, error) {
		close(asking)
		<-ctx.Done()
		time.Sleep(5 * time.Millisecond) // a slow callback is still waited for
		returned.Store(true)
		return true, nil // approving after cancellation approves nothing
	}}
	done := make(chan error, 1)
	go func() { _, err := ts.Run(ctx, o, calls); done <- err }()
	<-asking
	cancel()
	err := <-done
	if !returned.Load() {
		t.Fatal("Run returned before the callback did")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if got := d.kinds(); !slices.Equal(got, []string{"screenshot"}) {
		t.Fatalf("driver calls = %v", got)
	}
	noViolations(t, srv)
}

func TestRetry500DoesNotRepeatActions(t *testing.T) {
	ts, srv, d := setup(t,
		respserver.Turn{Actions: respserver.Call(shot).Actions, Fail500: 1},
		respserver.Turn{Actions: respserver.Call(`{"type":"click","x":3,"y":4}`, `{"type":"type","text":"hi"}`).Actions, Fail500: 2},
		respserver.Turn{Message: "done", Fail500: 1})
	res, err := ts.Run(context.Background(), opts(), CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	if srv.Attempts(0) != 2 || srv.Attempts(1) != 3 || srv.Attempts(2) != 2 {
		t.Fatalf("attempts %d %d %d", srv.Attempts(0), srv.Attempts(1), srv.Attempts(2))
	}
	if got := d.kinds(); !slices.Equal(got, []string{"screenshot", "click", "type", "screenshot"}) {
		t.Fatalf("driver calls = %v: each action must run exactly once", got)
	}
	if res.Usage.Requests != 3 || res.Usage.Incomplete {
		t.Fatalf("usage = %+v (retries are one request each)", res.Usage)
	}
	// Retries carry the same body: the outputs of the same actions.
	reqs := srv.Requests()
	for i := 1; i < len(reqs); i++ {
		if reqs[i].Turn == reqs[i-1].Turn && string(reqs[i].Body) != string(reqs[i-1].Body) {
			t.Fatalf("retry of turn %d changed the body", reqs[i].Turn)
		}
	}
}

func TestTruncatedBody(t *testing.T) {
	ts, srv, d := setup(t,
		respserver.Call(shot),
		respserver.Turn{Actions: respserver.Call(`{"type":"click","x":3,"y":4}`).Actions, Truncate: true},
		respserver.Final("done"))
	_, err := ts.Run(context.Background(), opts(), CallOptions{})
	noViolations(t, srv)
	var re *RunError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "request 2 of 20") {
		t.Fatalf("err = %v", err)
	}
	if got := d.kinds(); !slices.Equal(got, []string{"screenshot"}) {
		t.Fatalf("driver calls = %v", got)
	}
	if !re.Usage.Incomplete || re.Usage.Requests != 1 {
		t.Fatalf("usage = %+v", re.Usage)
	}
	if srv.Attempts(1) != 1 {
		t.Fatalf("a truncated body was retried %d times", srv.Attempts(1))
	}
}

func TestDiagnostics(t *testing.T) {
	ts, srv, _ := setup(t,
		respserver.Call(shot),
		respserver.Turn{Actions: respserver.Call(`{"type":"click","x":33,"y":17}`, `{"type":"type","text":"hunter2-password"}`).Actions, NoUsage: true},
		respserver.Final("done"))
	var diags []Diagnostic
	o := opts()
	o.OnDiagnostic = func(d Diagnostic) { diags = append(diags, d) }
	res, err := ts.Run(context.Background(), o, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	if len(diags) != 3 {
		t.Fatalf("%d records, want 3", len(diags))
	}
	for i, d := range diags {
		if d.API != "responses" || d.Stage != "request" || d.Reason != "completed" || d.Member != "computer" || d.Duration <= 0 {
			t.Fatalf("record %d = %+v", i, d)
		}
		data, _ := json.Marshal(d)
		s := string(data)
		for _, private := range []string{"hunter2", "base64", "iVBOR", `"x"`, "click", "text", testKey} {
			if strings.Contains(s, private) {
				t.Fatalf("record %d leaks %q: %s", i, private, s)
			}
		}
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		for _, k := range []string{"api", "stage", "reason", "usage", "call_id", "member", "duration"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("record %d has no %q: %s", i, k, s)
			}
		}
	}
	if diags[1].Usage != nil || diags[0].Usage == nil || diags[0].CallID == "" || diags[2].CallID != "" {
		t.Fatalf("records = %+v", diags)
	}
	// Totals: turns 0 and 2 only, marked incomplete.
	if u := res.Usage; !u.Incomplete || u.InputTokens != 100+120 || u.TotalTokens != 120+140 {
		t.Fatalf("totals = %+v", u)
	}
}

func TestPanickingObserversChangeNothing(t *testing.T) {
	script := []respserver.Turn{respserver.Call(shot), respserver.Call(`{"type":"click","x":1,"y":1}`), respserver.Final("done")}
	ts, srv, d := setup(t, script...)
	o := opts()
	o.OnEvent = func(Event) { panic("event observer") }
	o.OnDiagnostic = func(Diagnostic) { panic("diagnostic observer") }
	res, err := ts.Run(context.Background(), o, CallOptions{})
	if err != nil || res.FinalMessage != "done" {
		t.Fatalf("res %+v err %v", res, err)
	}
	noViolations(t, srv)
	if len(d.Calls()) != 3 {
		t.Fatalf("driver calls = %v", d.kinds())
	}
	// A panicking observer cannot approve safety checks either.
	ts2, _, d2 := setup(t, respserver.Turn{Actions: respserver.Call(shot).Actions, SafetyChecks: []respserver.SafetyCheck{{ID: "sc"}}})
	o2 := opts()
	o2.OnEvent = func(Event) { panic("x") }
	o2.OnDiagnostic = func(Diagnostic) { panic("y") }
	if _, err := ts2.Run(context.Background(), o2, CallOptions{}); !errors.Is(err, ErrNotApproved) {
		t.Fatalf("err = %v", err)
	}
	if len(d2.Calls()) != 0 {
		t.Fatal("an action ran without approval")
	}
}

func TestBadModelInput(t *testing.T) {
	cases := []struct {
		name   string
		action string
		want   string
	}{
		{"unknown type", `{"type":"teleport","x":1,"y":1}`, "unknown action type"},
		{"missing field", `{"type":"click","x":1}`, `missing field "y"`},
		{"unexpected field", `{"type":"type","text":"a","x":3}`, `unexpected field "x"`},
		{"point off the image", `{"type":"click","x":64,"y":10}`, "outside the 64x40 image"},
		{"negative point", `{"type":"scroll","x":-1,"y":10,"scroll_x":0,"scroll_y":5}`, "outside"},
		{"one-point drag", `{"type":"drag","path":[{"x":1,"y":1}]}`, "at least 2 points"},
		{"drag off the image", `{"type":"drag","path":[{"x":1,"y":1},{"x":1,"y":40}]}`, "outside"},
		{"unknown key", `{"type":"keypress","keys":["ctrl","hyperdrive"]}`, `unknown key name "hyperdrive"`},
		{"unknown button", `{"type":"click","x":1,"y":1,"button":"sixth"}`, "unknown button"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Two good actions first: validation happens before any runs.
			ts, srv, d := setup(t,
				respserver.Call(shot),
				respserver.Call(`{"type":"move","x":2,"y":2}`, `{"type":"type","text":"x"}`, tc.action, `{"type":"wait"}`),
				respserver.Final("done"))
			_, err := ts.Run(context.Background(), opts(), CallOptions{})
			noViolations(t, srv)
			var be *BadInputError
			if !errors.As(err, &be) || be.Index != 2 || !strings.HasPrefix(be.CallID, "call_") {
				t.Fatalf("err = %v, want BadInputError at index 2", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), be.CallID+" action 2") {
				t.Fatalf("err = %q, want it to name the call, the index and %q", err, tc.want)
			}
			if got := d.kinds(); !slices.Equal(got, []string{"screenshot"}) {
				t.Fatalf("driver calls = %v: nothing of a bad call may run", got)
			}
		})
	}
}

func TestCoordinatesBeforeScreenshot(t *testing.T) {
	// Coordinates before any screenshot was sent have no image space.
	ts, _, d := setup(t, respserver.Call(`{"type":"click","x":1,"y":1}`))
	_, err := ts.Run(context.Background(), opts(), CallOptions{})
	var be *BadInputError
	if !errors.As(err, &be) || be.Index != 0 || !strings.Contains(err.Error(), "no screenshot has been sent") {
		t.Fatalf("err = %v", err)
	}
	if len(d.Calls()) != 0 {
		t.Fatal("driver was called")
	}
}

func TestExecute(t *testing.T) {
	d := newFakeDriver(t, 64, 40)
	ts := New(openai.NewClient(), computer.Sequential(d))
	first := decodeCall(t, `{"type":"computer_call","id":"cu_1","call_id":"call_1","status":"completed",
		"pending_safety_checks":[{"id":"sc_1","code":"irrelevant_domain","message":"m"}],"actions":[{"type":"screenshot"}]}`)
	approve := CallOptions{ApproveSafetyChecks: func(context.Context, CallInfo, []SafetyCheck) (any, error) { return true, nil }}
	out, err := ts.Execute(context.Background(), first, approve, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(out)
	var got struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output struct {
			Type     string `json:"type"`
			ImageURL string `json:"image_url"`
			Detail   string `json:"detail"`
		} `json:"output"`
		Acks []struct{ ID, Code, Message string } `json:"acknowledged_safety_checks"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Type != "computer_call_output" || got.CallID != "call_1" || got.Output.Type != "computer_screenshot" ||
		got.Output.Detail != "original" || !strings.HasPrefix(got.Output.ImageURL, "data:image/png;base64,") ||
		len(got.Acks) != 1 || got.Acks[0].ID != "sc_1" || got.Acks[0].Code != "irrelevant_domain" {
		t.Fatalf("output = %s", data)
	}
	// The next call is checked against that screenshot's image.
	second := decodeCall(t, `{"type":"computer_call","id":"cu_2","call_id":"call_2","status":"completed",
		"pending_safety_checks":[],"actions":[{"type":"click","x":70,"y":1}]}`)
	_, err = ts.Execute(context.Background(), second, CallOptions{}, nil)
	var be *BadInputError
	if !errors.As(err, &be) || be.CallID != "call_2" {
		t.Fatalf("err = %v", err)
	}
	// Without the callback, the same checks are refused.
	_, err = ts.Execute(context.Background(), first, CallOptions{}, nil)
	if !errors.Is(err, ErrNotApproved) {
		t.Fatalf("err = %v", err)
	}
	if n := len(d.Calls()); n != 1 {
		t.Fatalf("%d driver calls, want 1", n)
	}
	// An unfinished call is not executed.
	partial := decodeCall(t, `{"type":"computer_call","id":"cu_3","call_id":"call_3","status":"in_progress","pending_safety_checks":[],"actions":[{"type":"wait"}]}`)
	if _, err := ts.Execute(context.Background(), partial, CallOptions{}, nil); !errors.As(err, &be) || be.Index != -1 {
		t.Fatalf("err = %v", err)
	}
	empty := decodeCall(t, `{"type":"computer_call","id":"cu_4","call_id":"call_4","status":"completed","pending_safety_checks":[],"actions":[]}`)
	if _, err := ts.Execute(context.Background(), empty, CallOptions{}, nil); !errors.As(err, &be) || !strings.Contains(err.Error(), "no actions") {
		t.Fatalf("err = %v", err)
	}
	ts.Close()
	if _, err := ts.Execute(context.Background(), first, approve, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v", err)
	}
}

// TestExecuteShot: decoded actions run under Execute's rules: every point is
// checked against the image the caller last sent before any action runs.
func TestExecuteShot(t *testing.T) {
	d := newFakeDriver(t, 64, 40)
	ts := New(openai.NewClient(), computer.Sequential(d))
	defer ts.Close()
	ctx := context.Background()
	shot, err := ts.ExecuteShot(ctx, "call_1", []actions.Action{{Type: actions.Screenshot}}, CallOptions{}, nil)
	if err != nil || !bytes.Equal(shot.PNG, d.png) || shot.Transform.Image != (scaling.Size{W: 64, H: 40}) {
		t.Fatalf("screenshot: %d bytes in %v, %v", len(shot.PNG), shot.Transform.Image, err)
	}
	var be *BadInputError
	_, err = ts.ExecuteShot(ctx, "call_2", []actions.Action{{Type: actions.Click, Button: "left", X: 1, Y: 1}, {Type: actions.Click, Button: "left", X: 64, Y: 1}}, CallOptions{}, nil)
	if !errors.As(err, &be) || be.CallID != "call_2" || be.Index != 1 || !strings.Contains(err.Error(), "outside the 64x40 image") {
		t.Fatalf("a point off the image: %v", err)
	}
	if _, err := ts.ExecuteShot(ctx, "call_3", nil, CallOptions{}, nil); !errors.As(err, &be) || be.Index != -1 {
		t.Fatalf("no actions: %v", err)
	}
	if got := d.kinds(); !slices.Equal(got, []string{"screenshot"}) {
		t.Fatalf("driver calls %v, want the first call's screenshot alone", got)
	}
	if _, err := ts.ExecuteShot(ctx, "call_4", []actions.Action{{Type: actions.Click, Button: "left", X: 63, Y: 39}}, CallOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	if got := d.kinds(); !slices.Equal(got, []string{"screenshot", "click", "screenshot"}) {
		t.Fatalf("driver calls %v", got)
	}
}

func decodeCall(t *testing.T, s string) responses.ResponseComputerToolCall {
	t.Helper()
	var c responses.ResponseComputerToolCall
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFinalMessageRequired(t *testing.T) {
	ts, _, _ := setup(t, respserver.Final(""))
	_, err := ts.Run(context.Background(), opts(), CallOptions{})
	if err == nil || !strings.Contains(err.Error(), "neither a local call nor a final message") {
		t.Fatalf("err = %v", err)
	}
}

func TestRunOptionsChecked(t *testing.T) {
	ts := New(openai.NewClient(), computer.Sequential(newFakeDriver(t, 8, 8)))
	for _, o := range []RunOptions{{Input: "x"}, {Model: "m"}, {Model: "m", Input: "x", MaxSteps: -1}} {
		if _, err := ts.Run(context.Background(), o, CallOptions{}); err == nil {
			t.Fatalf("options %+v accepted", o)
		}
	}
}

func TestScreenshotInsideABatch(t *testing.T) {
	ts, srv, d := setup(t, respserver.Call(shot), respserver.Call(shot, `{"type":"click","x":1,"y":1}`, shot), respserver.Final("done"))
	if _, err := ts.Run(context.Background(), opts(), CallOptions{}); err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	// Actions run as given, then the one final screenshot that is sent.
	want := []string{"screenshot", "screenshot", "click", "screenshot", "screenshot"}
	if got := d.kinds(); !slices.Equal(got, want) {
		t.Fatalf("driver calls = %v, want %v", got, want)
	}
}

func TestCancelDuringRequest(t *testing.T) {
	ts, srv, d := setup(t, respserver.Call(shot), respserver.Turn{Actions: respserver.Call(shot).Actions, Delay: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	o := opts()
	o.OnEvent = func(e Event) {
		if e.Kind == EventRequest && e.Step == 2 {
			go func() { time.Sleep(5 * time.Millisecond); cancel() }()
		}
	}
	start := time.Now()
	_, err := ts.Run(ctx, o, CallOptions{})
	if !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
		t.Fatalf("err = %v after %s", err, time.Since(start))
	}
	var re *RunError
	if !errors.As(err, &re) || !re.Usage.Incomplete || len(re.CompletedCallIDs) != 1 {
		t.Fatalf("run error = %+v", re)
	}
	if len(d.Calls()) != 1 || srv.Served() != 1 {
		t.Fatal("the slow turn was acted upon")
	}
}
