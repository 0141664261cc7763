package runner

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/tools/respserver"
)

// modes are the two ways a run reads its responses.
var modes = []struct {
	name   string
	stream *Streaming
}{{"plain", nil}, {"stream", &Streaming{}}}

// Each completed turn is shown before any of its calls runs and before the
// next request is sent; going on runs them; the final turn is shown too.
func TestIterateShowsEachTurnBeforeItsCallsRun(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			var runs atomic.Int32
			srv, url := respserver.Start(
				respserver.Items(respserver.Message("looking", "commentary"), respserver.FunctionCall("note", `{}`)),
				respserver.Items(respserver.FunctionCall("note", `{}`), respserver.FunctionCall("note", `{}`)),
				respserver.Final("done"))
			t.Cleanup(srv.Close)
			r := NewRunner(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey)))
			it := r.Iterate(context.Background(), RunOptions{Model: "m", Input: "go", Tools: []Tool{countingFunction(t, &runs)}, Stream: m.stream})
			var steps []int
			ranBefore := []int32{0, 1, 3}
			for turn := range it.Turns() {
				k := len(steps)
				steps = append(steps, turn.Step)
				if got := runs.Load(); got != ranBefore[k] {
					t.Fatalf("turn %d shown after %d runs, want %d: its calls ran first", turn.Step, got, ranBefore[k])
				}
				if served := srv.Served(); served != turn.Step {
					t.Fatalf("turn %d shown after %d requests", turn.Step, served)
				}
				if turn.Response == nil || turn.Response.ID != turn.ResponseID || turn.Usage == nil || turn.MaxSteps != DefaultMaxSteps {
					t.Fatalf("turn %+v", turn)
				}
				if len(turn.Ran) != 0 || len(turn.Deferred) != len(turn.Calls) {
					t.Fatalf("turn %d: ran %v deferred %v of %v", turn.Step, turn.Ran, turn.Deferred, turn.Calls)
				}
				for i, c := range turn.Calls {
					if c.Type != "function_call" || c.Name != "note" || c.CallID != turn.Deferred[i] {
						t.Fatalf("turn %d call %d: %+v", turn.Step, i, c)
					}
				}
				switch turn.Step {
				case 1:
					if !slices.Equal(turn.Messages, []string{"looking"}) || turn.Final != "" || len(turn.Calls) != 1 {
						t.Fatalf("turn 1: %+v", turn)
					}
					// The turn is the caller's copy: spoiling it changes nothing.
					turn.Response.Output[1].Type = "spoiled"
					turn.Calls[0].CallID = "spoiled"
				case 2:
					if len(turn.Calls) != 2 || turn.Final != "" {
						t.Fatalf("turn 2: %+v", turn)
					}
				case 3:
					if turn.Final != "done" || len(turn.Calls) != 0 {
						t.Fatalf("turn 3: %+v", turn)
					}
				}
			}
			res, err := it.Result()
			if err != nil {
				t.Fatal(err)
			}
			noViolations(t, srv)
			if !slices.Equal(steps, []int{1, 2, 3}) || res.FinalMessage != "done" || res.Steps != 3 || runs.Load() != 3 || len(res.CompletedCallIDs) != 3 {
				t.Fatalf("steps %v result %+v runs %d", steps, res, runs.Load())
			}
			// Only the first range runs.
			for range it.Turns() {
				t.Fatal("a second range ran the run again")
			}
		})
	}
}

// Stopping at a turn runs none of its calls, computer or function, and
// sends no further request; the error names what ran before.
func TestIterateStopRunsNothingOfTheTurn(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			var runs atomic.Int32
			ts, srv, d := setup(t,
				respserver.Call(shot),
				respserver.Items(respserver.ComputerCall(`{"type":"click","x":3,"y":4}`), respserver.FunctionCall("note", `{}`)),
				respserver.Final("done"))
			led := &crashLedger{f: openLedger(t, t.TempDir())}
			o := opts()
			o.Tools, o.Stream, o.Ledger = []Tool{countingFunction(t, &runs)}, m.stream, led
			it := ts.Iterate(context.Background(), o, CallOptions{})
			var first, stoppedAt *Turn
			for turn := range it.Turns() {
				if turn.Step == 1 {
					first = turn
					continue
				}
				stoppedAt = turn
				break
			}
			_, err := it.Result()
			var re *RunError
			if !errors.As(err, &re) || !errors.Is(err, ErrStopped) {
				t.Fatalf("err %v, want ErrStopped", err)
			}
			noViolations(t, srv)
			if got := d.kinds(); !slices.Equal(got, []string{"screenshot"}) || runs.Load() != 0 {
				t.Fatalf("driver calls %v, function runs %d: something of the stopped turn ran", got, runs.Load())
			}
			if srv.Served() != 2 {
				t.Fatalf("%d requests served, want 2", srv.Served())
			}
			if first == nil || stoppedAt == nil || len(stoppedAt.Deferred) != 2 {
				t.Fatalf("turns %+v %+v", first, stoppedAt)
			}
			if re.Steps != 2 || re.ResponseID != stoppedAt.ResponseID ||
				!slices.Equal(re.AttemptedCallIDs, first.Deferred) || !slices.Equal(re.CompletedCallIDs, first.Deferred) ||
				!strings.Contains(err.Error(), strings.Join(stoppedAt.Deferred, ", ")) {
				t.Fatalf("error %+v (%v)", re, err)
			}
			// The ledger ends at the pending request the stopped turn
			// answered: nothing of that turn is in it.
			if cp := lastCheckpoint(t, led.f); cp.Phase != PhaseRequest || cp.Step != 2 {
				t.Fatalf("last checkpoint %s of step %d", cp.Phase, cp.Step)
			}
			// The toolset is free again.
			if _, err := ts.Run(context.Background(), RunOptions{}, CallOptions{}); errors.Is(err, ErrBusy) {
				t.Fatal("the stopped iteration left the toolset busy")
			}
		})
	}
}

// A run stopped at a turn resumes from its ledger: the stopped turn's
// request is asked again and its calls run once, then.
func TestIterateStoppedRunResumes(t *testing.T) {
	var runs atomic.Int32
	script := []respserver.Turn{respserver.Items(respserver.FunctionCall("note", `{}`)), respserver.Final("done")}
	srv, url := respserver.Start(script...)
	t.Cleanup(srv.Close)
	led := &crashLedger{f: openLedger(t, t.TempDir())}
	o := RunOptions{Model: "m", Input: "go", MaxSteps: 5, Tools: []Tool{countingFunction(t, &runs)}, Ledger: led}
	it := NewRunner(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey))).Iterate(context.Background(), o)
	for range it.Turns() {
		break
	}
	if _, err := it.Result(); !errors.Is(err, ErrStopped) || runs.Load() != 0 {
		t.Fatalf("err %v runs %d", err, runs.Load())
	}
	cp := lastCheckpoint(t, led.f)
	// The model is asked afresh (respserver, like a model, answers the
	// same request again only as a new conversation).
	again, url2 := respserver.Start(script...)
	t.Cleanup(again.Close)
	o.Input = ""
	res, err := NewRunner(openai.NewClient(option.WithBaseURL(url2), option.WithAPIKey(testKey))).Resume(context.Background(), cp, o)
	if err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	noViolations(t, again)
	if res.FinalMessage != "done" || runs.Load() != 1 || res.Steps != 2 || res.Usage.Requests != 2 {
		t.Fatalf("result %+v runs %d", res, runs.Load())
	}
}

// runnerGoroutines are the stacks of other goroutines running code of the
// runner or the SDK.
func runnerGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	// The first stack is the calling goroutine's own.
	for _, g := range bytes.Split(buf, []byte("\n\n"))[1:] {
		if bytes.Contains(g, []byte("agentd/runner.")) || bytes.Contains(g, []byte("openai/openai-go")) {
			out = append(out, string(g))
		}
	}
	return out
}

// However the caller leaves the loop (break, panic, a cancelled context,
// never ranging), the run ends with it: no goroutine of the runner or the
// SDK is left, the toolset is free, and no request follows.
func TestIterateAbandonedLeavesNothing(t *testing.T) {
	leave := map[string]func(ctx context.Context, cancel func(), it *Iteration){
		"break": func(_ context.Context, _ func(), it *Iteration) {
			for range it.Turns() {
				break
			}
		},
		"panic": func(_ context.Context, _ func(), it *Iteration) {
			defer func() {
				if recover() == nil {
					t.Error("the panic did not reach the caller")
				}
			}()
			for range it.Turns() {
				panic("caller gone")
			}
		},
		"cancel": func(_ context.Context, cancel func(), it *Iteration) {
			for range it.Turns() {
				cancel()
			}
		},
		"never ranged": func(context.Context, func(), *Iteration) {},
	}
	for _, m := range modes {
		for name, f := range leave {
			t.Run(m.name+"/"+name, func(t *testing.T) {
				before := len(runnerGoroutines())
				var runs atomic.Int32
				ts, srv, d := setup(t, respserver.Items(respserver.ComputerCall(`{"type":"screenshot"}`), respserver.FunctionCall("note", `{}`)),
					respserver.Final("done"))
				o := opts()
				o.Tools, o.Stream = []Tool{countingFunction(t, &runs)}, m.stream
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				it := ts.Iterate(ctx, o, CallOptions{})
				f(ctx, cancel, it)
				if gs := runnerGoroutines(); len(gs) > before {
					t.Fatalf("%d goroutines left:\n%s", len(gs)-before, strings.Join(gs, "\n\n"))
				}
				if runs.Load() != 0 || len(d.Calls()) != 0 || srv.Served() > 1 {
					t.Fatalf("after leaving: %d runs, driver calls %v, %d requests", runs.Load(), d.kinds(), srv.Served())
				}
				if name == "never ranged" {
					if _, err := it.Result(); err == nil || srv.Served() != 0 {
						t.Fatalf("an iteration never ranged: %v, %d requests", err, srv.Served())
					}
				} else if _, err := it.Result(); !errors.Is(err, ErrStopped) && !errors.Is(err, context.Canceled) {
					t.Fatalf("result %v", err)
				}
				// The toolset is free: a run takes it (and refuses its options).
				if _, err := ts.Run(context.Background(), RunOptions{}, CallOptions{}); errors.Is(err, ErrBusy) {
					t.Fatal("the toolset is still busy")
				}
			})
		}
	}
}
