package browser

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestBrowserErrorIsShownAndTheResponseGoesOn(t *testing.T) {
	for name, err := range map[string]error{
		"direct":  NewBrowserError("The ref e1 is stale: read the page again."),
		"wrapped": fmt.Errorf("click: %w", &BrowserError{Message: "The ref e1 is stale: read the page again."}),
	} {
		f := newFake()
		f.errs[Click] = err
		ts := newToolset(t, f)
		outs, res, runErr := runCalls(t, ts, [2]string{"click", validArgs[Click]}, [2]string{"read_page", validArgs[ReadPage]})
		if runErr != nil {
			t.Fatalf("%s: %v", name, runErr)
		}
		if outs[0].Body.OK || outs[0].Body.Error != "The ref e1 is stale: read the page again." || outs[0].Body.State == nil {
			t.Errorf("%s: output %s, want the message and the state", name, outs[0].Raw)
		}
		if res.Calls[0].Outcome != OutcomeBrowserError || !res.Calls[0].Attempted || res.Calls[1].Outcome != OutcomeOK {
			t.Errorf("%s: records %+v", name, res.Calls)
		}
		if got := f.log.Entries(); !slices.Equal(got, []string{"state", "confirm", "click", "state", "read_page", "state"}) {
			t.Errorf("%s: ran %v", name, got)
		}
	}
}

// TestGenericFailureSkipsTheRest checks any other error (or a panic) gives
// a generic message without the raw error, still reports the state, and
// skips the response's remaining browser calls.
func TestGenericFailureSkipsTheRest(t *testing.T) {
	for name, set := range map[string]func(*fakeDriver){
		"error": func(f *fakeDriver) { f.errs[Type] = errors.New("cdp: node 42 detached; password=hunter2") },
		"panic": func(f *fakeDriver) {
			f.hook = func(_ context.Context, n string) error {
				if n == string(Type) {
					panic("nil map in driver")
				}
				return nil
			}
		},
	} {
		f := newFake()
		set(f)
		ts := newToolset(t, f)
		outs, res, err := runCalls(t, ts,
			[2]string{"find", validArgs[Find]},
			[2]string{"type", validArgs[Type]},
			[2]string{"click", validArgs[Click]},
			[2]string{"read_page", validArgs[ReadPage]})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(outs) != 4 {
			t.Fatalf("%s: %d outputs, want one per call", name, len(outs))
		}
		if outs[1].Body.OK || outs[1].Body.Error != msgGenericFailure || outs[1].Body.State == nil {
			t.Errorf("%s: output %s", name, outs[1].Raw)
		}
		if strings.Contains(outs[1].Raw, "hunter2") || strings.Contains(outs[1].Raw, "nil map") {
			t.Errorf("%s: the raw error reached the model: %s", name, outs[1].Raw)
		}
		for _, o := range outs[2:] {
			if o.Body.OK || o.has("state") || !strings.Contains(o.Body.Error, "Skipped") {
				t.Errorf("%s: skipped call's output %s", name, o.Raw)
			}
		}
		want := []Outcome{OutcomeOK, OutcomeFailed, OutcomeSkipped, OutcomeSkipped}
		for i, r := range res.Calls {
			if r.Outcome != want[i] {
				t.Errorf("%s: call %d outcome %s, want %s", name, i, r.Outcome, want[i])
			}
		}
		if res.Calls[1].Err == nil {
			t.Errorf("%s: the record lost the raw error", name)
		}
		if got := f.log.Entries(); slices.Contains(got, "click") || slices.Contains(got, "read_page") {
			t.Errorf("%s: skipped calls ran: %v", name, got)
		}
	}
}

// TestStateFailuresStopTheRun checks a failed or invalid state read stops
// the run, whether it is the read before consent or after the operation.
func TestStateFailuresStopTheRun(t *testing.T) {
	boom := errors.New("devtools gone")
	cases := []struct {
		name string
		m    Member
		set  func(*fakeDriver)
		want error
		// attempted: the driver method ran before the state read failed.
		attempted bool
	}{
		{"after a read", ReadPage, func(f *fakeDriver) { f.stateErr = boom }, ErrStateUnavailable, true},
		{"before consent", Click, func(f *fakeDriver) { f.stateErr = boom }, ErrStateUnavailable, false},
		{"list_tabs", ListTabs, func(f *fakeDriver) { f.stateErr = boom }, ErrStateUnavailable, false},
		{"after a browser error", Find, func(f *fakeDriver) {
			f.errs[Find] = NewBrowserError("no match")
			f.stateErr = boom
		}, ErrStateUnavailable, true},
		{"invalid state", Screenshot, func(f *fakeDriver) {
			f.state = State{Tabs: []Tab{{ID: "a", Active: true}, {ID: "b", Active: true}}}
		}, ErrInvalidState, true},
		{"state reader panics", ReadPage, func(f *fakeDriver) {
			f.hook = func(_ context.Context, n string) error {
				if n == "state" {
					panic("state reader bug")
				}
				return nil
			}
		}, ErrStateUnavailable, true},
	}
	for _, c := range cases {
		f := newFake()
		c.set(f)
		ts := newToolset(t, f)
		_, res, err := runCalls(t, ts, [2]string{string(c.m), validArgs[c.m]}, [2]string{"get_page_text", validArgs[GetPageText]})
		var se *StopError
		if !errors.As(err, &se) || !errors.Is(err, c.want) || se.Attempted != c.attempted || se.CallID != "c1" {
			t.Errorf("%s: Run error %v (%+v), want %v, attempted %v", c.name, err, se, c.want, c.attempted)
			continue
		}
		if c.want == ErrStateUnavailable && c.name != "state reader panics" && !errors.Is(err, boom) {
			t.Errorf("%s: %v does not wrap the driver's error", c.name, err)
		}
		if len(res.Outputs) != 0 || slices.Contains(f.log.Entries(), "get_page_text") || slices.Contains(f.log.Entries(), "confirm") {
			t.Errorf("%s: outputs %d, ran %v", c.name, len(res.Outputs), f.log.Entries())
		}
	}
}

// TestCancellationReachesEveryMethod cancels the context while each
// driver method (and each state reader) blocks: the method sees it, the run
// stops with the context's error, and nothing after it runs.
func TestCancellationReachesEveryMethod(t *testing.T) {
	for _, m := range AllMembers() {
		for _, blockAt := range []string{string(m), "state"} {
			if m == ListTabs && blockAt == string(m) {
				continue // list_tabs is the state reader
			}
			f := newFake()
			ctx, cancel := context.WithCancel(context.Background())
			saw := make(chan error, 1)
			f.hook = func(ctx context.Context, name string) error {
				if name != blockAt {
					return nil
				}
				cancel()
				<-ctx.Done() // a method that never sees the cancellation hangs the test
				saw <- ctx.Err()
				return ctx.Err()
			}
			ts := newToolset(t, f)
			b, err := ts.Prepare([]Call{{CallID: "c1", Name: string(m), Arguments: validArgs[m]},
				{CallID: "c2", Name: "read_page", Arguments: validArgs[ReadPage]}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = b.Run(ctx)
			if got := <-saw; !errors.Is(got, context.Canceled) {
				t.Errorf("%s blocking in %s: the method did not see the cancellation", m, blockAt)
			}
			var se *StopError
			if !errors.As(err, &se) || !errors.Is(err, context.Canceled) || se.CallID != "c1" {
				t.Errorf("%s blocking in %s: Run error %v, want a StopError for c1 with context.Canceled", m, blockAt, err)
			}
			if slices.Contains(f.log.Entries(), "read_page") && m != ReadPage {
				t.Errorf("%s blocking in %s: the next call ran: %v", m, blockAt, f.log.Entries())
			}
		}
	}
}

// TestCancellationReachesConsent checks a consent callback sees the
// cancellation and the run stops with nothing done.
func TestCancellationReachesConsent(t *testing.T) {
	f := newFake()
	ctx, cancel := context.WithCancel(context.Background())
	confirm := func(ctx context.Context, _ ConsentRequest) (any, error) {
		cancel()
		<-ctx.Done()
		return true, nil // a late approval after the end of the run does not count
	}
	ts := newToolset(t, f, WithConfirm(confirm))
	b, _ := ts.Prepare([]Call{{CallID: "c1", Name: "click", Arguments: validArgs[Click]}})
	_, err := b.Run(ctx)
	if !errors.Is(err, context.Canceled) || slices.Contains(f.log.Entries(), "click") {
		t.Fatalf("Run error %v, ran %v", err, f.log.Entries())
	}
}

func TestCancelledBeforeRunDoesNothing(t *testing.T) {
	f := newFake()
	ts := newToolset(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b, _ := ts.Prepare([]Call{{CallID: "c1", Name: "read_page", Arguments: validArgs[ReadPage]}})
	if _, err := b.Run(ctx); !errors.Is(err, context.Canceled) || len(f.log.Entries()) != 0 {
		t.Fatalf("Run error %v, ran %v", err, f.log.Entries())
	}
}
