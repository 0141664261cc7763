package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/scaling"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// A response with two computer calls, the second carrying a safety check:
// a run that dies at any of its checkpoints resumes there, in both the
// stored and the local-history mode. The calls completed before the stop
// are not run again, the response is not asked for again, the uncertain
// call runs again only when reconciled NotDone (Done answers it with a
// fresh screenshot), a call not started runs without asking, and the
// safety check is asked again for a call that runs after the resume.
func TestResumeInsideAResponse(t *testing.T) {
	check := respserver.SafetyCheck{ID: "sc_1", Code: "confirm", Message: "really?"}
	script := func() []respserver.Turn {
		second := respserver.ComputerCall(`{"type":"type","text":"ab"}`)
		second["pending_safety_checks"] = []any{map[string]any{"id": check.ID, "code": check.Code, "message": check.Message}}
		return []respserver.Turn{
			respserver.Call(shot),
			respserver.Items(respserver.ComputerCall(`{"type":"click","x":3,"y":4}`), second),
			respserver.Final("done"),
		}
	}
	// The checkpoints of the run: request 1, response, before and after
	// the screenshot call, request 2, response, before and after the click,
	// before and after the typing, request 3.
	const beforeShot, beforeClick, beforeType = 3, 7, 9
	for _, mode := range historyModes {
		for crashAt := 1; crashAt <= 11; crashAt++ {
			answers := []Reconciliation{""}
			if crashAt == beforeShot || crashAt == beforeClick || crashAt == beforeType {
				answers = []Reconciliation{Done, NotDone}
			}
			for _, answer := range answers {
				name := fmt.Sprintf("%s/crash at %d", mode.name, crashAt)
				if answer != "" {
					name += "/" + string(answer)
				}
				t.Run(name, func(t *testing.T) {
					resumeInsideAResponse(t, script(), mode, crashAt, answer, check.ID)
				})
			}
		}
	}
}

func resumeInsideAResponse(t *testing.T, turns []respserver.Turn, mode historyMode, crashAt int, answer Reconciliation, checkID string) {
	ts, srv, d := setup(t, turns...)
	dir := t.TempDir()
	f := openLedger(t, dir)
	var approvals atomic.Int32
	calls := CallOptions{ApproveSafetyChecks: func(_ context.Context, _ CallInfo, cs []SafetyCheck) (any, error) {
		approvals.Add(1)
		return len(cs) == 1 && cs[0].ID == checkID, nil
	}}
	o := func() RunOptions {
		o := mode.opts()
		o.MaxSteps = 5
		return o
	}
	runToCrash(t, ts, o(), calls, f, crashAt)
	f.Close()
	before, approvedBefore := d.kinds(), approvals.Load()

	f = openLedger(t, dir)
	cp := lastCheckpoint(t, f)
	u, err := cp.Uncertain()
	if err != nil {
		t.Fatal(err)
	}
	if (u != nil) != (answer != "") {
		t.Fatalf("checkpoint %s of call %s: uncertain %+v", cp.Phase, cp.CallID, u)
	}
	asked := 0
	again := o()
	again.Input, again.Ledger = "", f
	again.Reconcile = func(_ context.Context, got Uncertain) (Reconciliation, error) {
		asked++
		if got.CallID != cp.CallID || got.Type != "computer_call" || len(got.Actions) != 1 {
			t.Errorf("uncertain %+v, want call %s", got, cp.CallID)
		}
		return answer, nil
	}
	res, err := ts.Resume(context.Background(), cp, again, calls)
	if err != nil {
		t.Fatal(err, srv.Violations())
	}
	noViolations(t, srv)
	if asked != len(answers(answer)) {
		t.Fatalf("Reconcile asked %d times", asked)
	}
	if res.FinalMessage != "done" || res.Steps != 3 || srv.Served() != 3 {
		t.Fatalf("result %+v after %d requests served", res, srv.Served())
	}
	// Every action ran once, except an uncertain one reconciled Done, which
	// (the crash came before it) never ran.
	want := map[string]int{"click": 1, "type": 1}
	if answer == Done {
		want[map[int]string{7: "click", 9: "type"}[crashAt]] = 0
	}
	got := map[string]int{}
	for _, k := range d.kinds() {
		got[k]++
	}
	if got["click"] != want["click"] || got["type"] != want["type"] {
		t.Fatalf("actions %v then %v, want %v", before, d.kinds(), want)
	}
	// The safety check is asked again when the typing runs after the
	// resume, and only then.
	typedAfter := got["type"] > 0 && !strings.Contains(strings.Join(before, " "), "type")
	if n := approvals.Load() - approvedBefore; (n == 1) != typedAfter || n > 1 {
		t.Fatalf("%d approvals after the resume (typed after it: %v)", n, typedAfter)
	}
}

// answers is the reconciliations a resume should ask for: one if the
// test gives an answer.
func answers(a Reconciliation) []Reconciliation {
	if a == "" {
		return nil
	}
	return []Reconciliation{a}
}

// Without Reconcile, or with an answer that is neither Done nor NotDone,
// an uncertain call does not resume and the desktop is untouched.
func TestResumeNeedsAReconciliation(t *testing.T) {
	ts, _, d := setup(t, respserver.Call(shot), respserver.Call(`{"type":"click","x":3,"y":4}`), respserver.Final("done"))
	f := openLedger(t, t.TempDir())
	runToCrash(t, ts, opts(), CallOptions{}, f, 7) // before the click
	calls := len(d.Calls())
	cp := lastCheckpoint(t, f)
	for _, rec := range []func(context.Context, Uncertain) (Reconciliation, error){
		nil,
		func(context.Context, Uncertain) (Reconciliation, error) { return "maybe", nil },
		func(context.Context, Uncertain) (Reconciliation, error) { return "", errors.New("nobody is there") },
	} {
		o := opts()
		o.Reconcile = rec
		_, err := ts.Resume(context.Background(), cp, o, CallOptions{})
		if err == nil || (rec == nil) != errors.Is(err, ErrUncertain) {
			t.Fatalf("resume: %v", err)
		}
	}
	if len(d.Calls()) != calls {
		t.Fatal("a refused resume touched the desktop")
	}
}

// A resume whose driver's view is not the image space the model saw is
// refused before anything acts: its coordinates would land elsewhere.
func TestResumeInAnotherViewIsRefused(t *testing.T) {
	ts, _, d := setup(t, respserver.Call(shot), respserver.Call(`{"type":"click","x":3,"y":4}`), respserver.Final("done"))
	f := openLedger(t, t.TempDir())
	runToCrash(t, ts, opts(), CallOptions{}, f, 6) // the second response, before its click
	cp := lastCheckpoint(t, f)
	d.size = scaling.Size{W: 32, H: 20}
	before := len(d.kinds())
	_, err := ts.Resume(context.Background(), cp, opts(), CallOptions{})
	if err == nil || !strings.Contains(err.Error(), "the model saw 64x40 screenshots, but the driver's view gives 32x20") {
		t.Fatalf("resume: %v", err)
	}
	if got := d.kinds()[before:]; !slices.Equal(got, []string{"screenshot"}) {
		t.Fatalf("the refused resume did %v, want only a screenshot", got)
	}
}

type noArgs struct{}

// A function call left uncertain: Done answers it with DoneOutputText and
// never calls the function; NotDone calls it (once).
func TestResumeUncertainFunction(t *testing.T) {
	for _, answer := range []Reconciliation{Done, NotDone} {
		t.Run(string(answer), func(t *testing.T) {
			srv, url := respserver.Start(respserver.Items(respserver.FunctionCall("book", `{}`)), respserver.Final("done"))
			defer srv.Close()
			calls := 0
			book, err := NewFunction("book", "Book it.", func(context.Context, noArgs) (Output, error) {
				calls++
				return Text("booked"), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			r := NewRunner(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey)))
			f := openLedger(t, t.TempDir())
			led := &crashLedger{f: f, crashAt: 3} // request, response, before the call
			o := RunOptions{Model: "m", Input: "book it", Tools: []Tool{book}, Ledger: led}
			if _, err := r.Run(context.Background(), o); !errors.Is(err, errCrash) {
				t.Fatalf("run: %v", err)
			}
			cp := lastCheckpoint(t, f)
			u, err := cp.Uncertain()
			if err != nil || u == nil || u.Type != "function_call" || u.Name != "book" || u.Arguments != "{}" {
				t.Fatalf("uncertain %+v, %v", u, err)
			}
			o.Input, o.Ledger = "", &crashLedger{f: f}
			o.Reconcile = func(context.Context, Uncertain) (Reconciliation, error) { return answer, nil }
			if _, err := r.Resume(context.Background(), cp, o); err != nil {
				t.Fatal(err, srv.Violations())
			}
			noViolations(t, srv)
			want, text := 1, "booked"
			if answer == Done {
				want, text = 0, DoneOutputText
			}
			reqs := srv.Requests()
			quoted, _ := json.Marshal(text)
			if calls != want || !bytes.Contains(reqs[len(reqs)-1].Body, quoted) {
				t.Fatalf("the function ran %d times; last request %s", calls, reqs[len(reqs)-1].Body)
			}
		})
	}
}
