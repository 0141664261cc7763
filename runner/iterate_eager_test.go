package runner

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/tools/respserver"
)

// countingNamed is a function tool of the given name that counts its runs.
func countingNamed(t *testing.T, name string, runs *atomic.Int32) *Function {
	t.Helper()
	f, err := NewFunction(name, "", func(context.Context, struct{}) (Output, error) {
		runs.Add(1)
		return Text("ran " + name), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// With eager execution the turn shows what already ran while it streamed
// and what is deferred; stopping there runs no deferred call, and the
// ledger holds the complete response with the early call completed, so
// Resume continues inside it: the deferred call runs once, the early one
// never again.
func TestIterateEagerStopRunsNoDeferredCall(t *testing.T) {
	var early, later atomic.Int32
	srv, url := respserver.Start(respserver.Items(respserver.FunctionCall("early", `{}`), respserver.FunctionCall("later", `{}`)),
		respserver.Final("done"))
	t.Cleanup(srv.Close)
	led := &crashLedger{f: openLedger(t, t.TempDir())}
	o := RunOptions{Model: "m", Input: "go", MaxSteps: 5, Ledger: led,
		Tools:  []Tool{countingNamed(t, "early", &early), countingNamed(t, "later", &later)},
		Stream: &Streaming{Eager: true, EarlyExecution: &EarlyExecution{Functions: []string{"early"}}}}
	r := NewRunner(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey)))
	it := r.Iterate(context.Background(), o)
	var shown *Turn
	for turn := range it.Turns() {
		shown = turn
		if early.Load() != 1 || later.Load() != 0 {
			t.Fatalf("turn shown after early %d, later %d runs", early.Load(), later.Load())
		}
		break
	}
	if shown == nil || len(shown.Calls) != 2 || !slices.Equal(shown.Ran, []string{shown.Calls[0].CallID}) ||
		!slices.Equal(shown.Deferred, []string{shown.Calls[1].CallID}) {
		t.Fatalf("turn %+v", shown)
	}
	_, err := it.Result()
	var re *RunError
	if !errors.As(err, &re) || !errors.Is(err, ErrStopped) || later.Load() != 0 || srv.Served() != 1 ||
		!slices.Equal(re.AttemptedCallIDs, shown.Ran) || !slices.Equal(re.CompletedCallIDs, shown.Ran) {
		t.Fatalf("err %v (%+v), later %d, %d requests", err, re, later.Load(), srv.Served())
	}
	cp := lastCheckpoint(t, led.f)
	var resp struct {
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(cp.Response, &resp); err != nil || cp.Phase != PhaseAfterCall || cp.CallID != shown.Ran[0] ||
		len(resp.Output) != 2 || len(cp.Outputs) != 1 {
		t.Fatalf("last checkpoint %s of %s with %d output items, %d outputs (%v)", cp.Phase, cp.CallID, len(resp.Output), len(cp.Outputs), err)
	}
	o.Input = ""
	res, err := r.Resume(context.Background(), cp, o)
	if err != nil {
		t.Fatal(err, srv.Violations())
	}
	noViolations(t, srv)
	if res.FinalMessage != "done" || early.Load() != 1 || later.Load() != 1 {
		t.Fatalf("result %+v, early %d later %d runs", res, early.Load(), later.Load())
	}
}
