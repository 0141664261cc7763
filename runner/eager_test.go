package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/internal/calllog"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// timeline records, in order, what the functions did and when the runner
// saw the response complete.
type timeline struct {
	log calllog.Log
	ran chan string
}

func newTimeline() *timeline { return &timeline{ran: make(chan string, 64)} }

// before reports whether a comes before b in the log.
func (tl *timeline) before(a, b string) bool {
	log := tl.log.Entries()
	i, j := slices.Index(log, a), slices.Index(log, b)
	return i >= 0 && j >= 0 && i < j
}

// streaming observes the end of each response into the timeline.
func (tl *timeline) streaming() *Streaming {
	return &Streaming{Eager: true, OnEvent: func(ev responses.ResponseStreamEventUnion) {
		if ev.Type == "response.completed" {
			tl.log.Add("completed")
		}
	}}
}

type noteArgs struct {
	Text string `json:"text"`
}

// noteFunction is a function tool that logs its argument.
func noteFunction(t *testing.T, name string, tl *timeline, opts ...FunctionOption) *Function {
	t.Helper()
	f, err := NewFunction(name, "", func(_ context.Context, a noteArgs) (Output, error) {
		tl.log.Add(a.Text)
		tl.ran <- a.Text
		return Text("noted " + a.Text), nil
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func note(text string) respserver.Item {
	return respserver.FunctionCall("note", fmt.Sprintf(`{"text":%q}`, text))
}

func client(url string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey), option.WithMaxRetries(0))
}

// waitRan holds the stream until the function ran with text (the call
// was executed while the response was still arriving).
func waitRan(tl *timeline, text string) error {
	timeout := time.After(20 * time.Second)
	for {
		select {
		case got := <-tl.ran:
			if got == text {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("call %q did not run while the stream was held", text)
		}
	}
}

// eagerLedger keeps every checkpoint.
type eagerLedger struct{ cps []*Checkpoint }

func (m *eagerLedger) Save(data []byte) error {
	cp, err := LoadCheckpoint(data)
	if err != nil {
		return err
	}
	m.cps = append(m.cps, cp)
	return nil
}

// A completed call runs while the response is still arriving: the server
// holds the stream after the item until the function ran.
func TestEagerRunsACompletedCallBeforeTheEnd(t *testing.T) {
	tl := newTimeline()
	turn := respserver.Items(note("a"), respserver.Message("working", "commentary"))
	turn.Stream.AfterItem = func(i int) error {
		if i == 0 {
			return waitRan(tl, "a")
		}
		return nil
	}
	srv, url := respserver.Start(turn, respserver.Final("done"))
	t.Cleanup(srv.Close)
	res, err := NewRunner(client(url)).Run(context.Background(), RunOptions{Model: "m", Input: "go",
		Tools: []Tool{noteFunction(t, "note", tl)}, Stream: tl.streaming()})
	if err != nil || res.FinalMessage != "done" || len(res.CompletedCallIDs) != 1 {
		t.Fatalf("res %+v err %v", res, err)
	}
	noViolations(t, srv)
	if !tl.before("a", "completed") {
		t.Fatalf("timeline %v", tl.log.Entries())
	}
}

// Items out of order or after an index gap, and all after them, wait for
// the complete response; what came in order before runs early.
func TestEagerDisorderWaits(t *testing.T) {
	for _, fault := range []string{"gap", "out of order"} {
		t.Run(fault, func(t *testing.T) {
			tl := newTimeline()
			turn := respserver.Items(note("a"), note("b"), note("c"))
			if fault == "gap" {
				turn.Stream.Gap = 1
			} else {
				turn.Stream.OutOfOrder = 2
			}
			srv, url := respserver.Start(turn, respserver.Final("done"))
			t.Cleanup(srv.Close)
			res, err := NewRunner(client(url)).Run(context.Background(), RunOptions{Model: "m", Input: "go",
				Tools: []Tool{noteFunction(t, "note", tl)}, Stream: tl.streaming()})
			if err != nil || len(res.CompletedCallIDs) != 3 {
				t.Fatalf("res %+v err %v", res, err)
			}
			noViolations(t, srv)
			if got := tl.log.Entries(); !slices.Equal(got, []string{"a", "completed", "b", "c", "completed"}) {
				t.Fatalf("timeline %v", got)
			}
		})
	}
}

// An item changed (or left out of the final response) after its call ran
// early stops the run; the call stays recorded: in the error, the events
// and the ledger.
func TestEagerChangeAfterExecutionStops(t *testing.T) {
	for _, how := range []string{"changed", "removed"} {
		t.Run(how, func(t *testing.T) {
			tl := newTimeline()
			turn := respserver.Items(note("a"), note("b"))
			turn.Stream.Change = &respserver.ItemChange{Index: 0, After: 1, Item: respserver.Item{"arguments": `{"text":"z"}`}, Remove: how == "removed"}
			srv, url := respserver.Start(turn, respserver.Final("done"))
			t.Cleanup(srv.Close)
			var events []Event
			led := &eagerLedger{}
			o := RunOptions{Model: "m", Input: "go", Tools: []Tool{noteFunction(t, "note", tl)}, Stream: tl.streaming(), Ledger: led}
			o.OnEvent = func(ev Event) { events = append(events, ev) }
			_, err := NewRunner(client(url)).Run(context.Background(), o)
			var re *RunError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "executed early") && !strings.Contains(err.Error(), "run early") {
				t.Fatalf("err %v", err)
			}
			if len(re.AttemptedCallIDs) != 2 || !slices.Equal(re.AttemptedCallIDs, re.CompletedCallIDs) || !strings.Contains(err.Error(), re.CompletedCallIDs[0]) {
				t.Fatalf("attempted %v completed %v", re.AttemptedCallIDs, re.CompletedCallIDs)
			}
			if got := tl.log.Entries(); !slices.Equal(got, []string{"a", "b"}) && !slices.Equal(got, []string{"a", "b", "completed"}) {
				t.Fatalf("timeline %v", got)
			}
			var fn int
			for _, ev := range events {
				if ev.Kind == EventFunction && ev.Function.Error == "" {
					fn++
				}
			}
			last := led.cps[len(led.cps)-1]
			if fn != 2 || last.Phase != PhaseAfterCall || last.CallID != re.CompletedCallIDs[1] || len(last.Outputs) != 2 {
				t.Fatalf("function events %d, last checkpoint %+v", fn, last)
			}
			if srv.Served() != 1 {
				t.Fatalf("%d requests after the change", srv.Served())
			}
		})
	}
}

// A stream cut after two items keeps the effects of the calls run early:
// the error names them attempted and completed, the ledger's last
// checkpoint is after the second call (so the run does not resume on its
// own), and the events record both.
func TestEagerCutStreamKeepsCompletedEffects(t *testing.T) {
	tl := newTimeline()
	turn := respserver.Items(note("a"), note("b"), note("c"))
	turn.Stream.Cut = 3
	srv, url := respserver.Start(turn, respserver.Final("done"))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	rec, err := CreateRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	led := &eagerLedger{}
	o := RunOptions{Model: "m", Input: "go", Tools: []Tool{noteFunction(t, "note", tl)}, Stream: tl.streaming(), Ledger: led}
	o.OnEvent = rec.Event
	_, err = NewRunner(client(url)).Run(context.Background(), o)
	if ferr := rec.Finish(nil, err); ferr != nil {
		t.Fatal(ferr)
	}
	var re *RunError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "stream") || len(re.CompletedCallIDs) != 2 || !slices.Equal(re.AttemptedCallIDs, re.CompletedCallIDs) {
		t.Fatalf("err %v", err)
	}
	for _, id := range re.CompletedCallIDs {
		if !strings.Contains(err.Error(), id) {
			t.Fatalf("the error does not name %s: %v", id, err)
		}
	}
	if got := tl.log.Entries(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("timeline %v", got)
	}
	last := led.cps[len(led.cps)-1]
	if last.Phase != PhaseAfterCall || !slices.Equal(last.Completed, re.CompletedCallIDs) || len(last.Outputs) != 2 {
		t.Fatalf("last checkpoint %+v", last)
	}
	if _, err := resumeFrom(context.Background(), last, &RunOptions{}); !errors.Is(err, ErrUncertain) {
		t.Fatalf("resume from the last checkpoint: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	recorded := string(data)
	if n := strings.Count(recorded, `"kind":"function"`); n != 2 || !strings.Contains(recorded, `"completed_call_ids":["`+re.CompletedCallIDs[0]) {
		t.Fatalf("%d function events recorded:\n%s", n, recorded)
	}
}

// The early-execution policy: an empty one defers everything; deferring
// one call (by the policy or BeforeEarlyCall) defers every call after it.
func TestEagerPolicy(t *testing.T) {
	cases := []struct {
		name   string
		policy *EarlyExecution
		before func(EarlyCall) EarlyDecision
		want   []string
	}{
		{"empty policy", &EarlyExecution{}, nil, []string{"completed", "a", "b", "c", "completed"}},
		{"not in the allowlist", &EarlyExecution{Functions: []string{"note"}}, nil, []string{"a", "completed", "b", "c", "completed"}},
		{"before_early_call defers", nil, func(c EarlyCall) EarlyDecision {
			if c.OutputIndex == 1 {
				return EarlyDefer
			}
			return EarlyRun
		}, []string{"a", "completed", "b", "c", "completed"}},
		{"before_early_call panics", nil, func(EarlyCall) EarlyDecision { panic("no") }, []string{"completed", "a", "b", "c", "completed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTimeline()
			// b is a call of "other", which the allowlist case leaves out.
			turn := respserver.Items(note("a"), respserver.FunctionCall("other", `{"text":"b"}`), note("c"))
			srv, url := respserver.Start(turn, respserver.Final("done"))
			t.Cleanup(srv.Close)
			st := tl.streaming()
			st.EarlyExecution = tc.policy
			if tc.before != nil {
				st.BeforeEarlyCall = func(_ context.Context, c EarlyCall) EarlyDecision { return tc.before(c) }
			}
			_, err := NewRunner(client(url)).Run(context.Background(), RunOptions{Model: "m", Input: "go",
				Tools: []Tool{noteFunction(t, "note", tl), noteFunction(t, "other", tl)}, Stream: st})
			if err != nil {
				t.Fatal(err)
			}
			noViolations(t, srv)
			if got := tl.log.Entries(); !slices.Equal(got, tc.want) {
				t.Fatalf("timeline %v, want %v", got, tc.want)
			}
		})
	}
}

// Independent functions run side by side while the stream goes on, never
// more than MaxConcurrentCalls at once (counted inside the functions);
// with a ledger, one at a time.
func TestEagerConcurrencyLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		max    int
		calls  int
		ledger bool
		want   int
	}{
		{"default limit", 0, 4, false, 2},
		{"limit 3", 3, 6, false, 3},
		{"ledger", 0, 2, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			cond := sync.NewCond(&mu)
			inFlight, most := 0, 0
			limit := tc.want
			// Each call waits (a bounded time) for the others of its group,
			// so the count reaches the limit when the runner allows it.
			f, err := NewFunction("work", "", func(context.Context, struct{}) (Output, error) {
				mu.Lock()
				defer mu.Unlock()
				inFlight++
				most = max(most, inFlight)
				cond.Broadcast()
				deadline := time.Now().Add(2 * time.Second)
				for inFlight < limit && time.Now().Before(deadline) {
					go func() { time.Sleep(50 * time.Millisecond); cond.Broadcast() }()
					cond.Wait()
				}
				inFlight--
				return Text("ok"), nil
			}, Independent())
			if err != nil {
				t.Fatal(err)
			}
			var items []respserver.Item
			for range tc.calls {
				items = append(items, respserver.FunctionCall("work", `{}`))
			}
			srv, url := respserver.Start(respserver.Items(items...), respserver.Final("done"))
			t.Cleanup(srv.Close)
			o := RunOptions{Model: "m", Input: "go", Tools: []Tool{f}, Stream: &Streaming{Eager: true, MaxConcurrentCalls: tc.max}}
			if tc.ledger {
				o.Ledger = &eagerLedger{}
			}
			res, err := NewRunner(client(url)).Run(context.Background(), o)
			if err != nil || len(res.CompletedCallIDs) != tc.calls {
				t.Fatalf("res %+v err %v", res, err)
			}
			noViolations(t, srv)
			if most != tc.want {
				t.Fatalf("at most %d calls ran at once, want %d", most, tc.want)
			}
		})
	}
}

// Bad streaming options are refused before anything runs.
func TestEagerBadOptions(t *testing.T) {
	tl := newTimeline()
	for _, tc := range []struct {
		st   Streaming
		want string
	}{
		{Streaming{EarlyExecution: &EarlyExecution{}}, "need Streaming.Eager"},
		{Streaming{Eager: true, MaxConcurrentCalls: -1}, "at least 1"},
		{Streaming{Eager: true, EarlyExecution: &EarlyExecution{Functions: []string{"nope"}}}, `"nope", which no tool`},
	} {
		srv, url := respserver.Start(respserver.Final("done"))
		st := tc.st
		_, err := NewRunner(client(url)).Run(context.Background(), RunOptions{Model: "m", Input: "go",
			Tools: []Tool{noteFunction(t, "note", tl)}, Stream: &st})
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) || srv.Served() != 0 {
			t.Fatalf("%+v: err %v", tc.st, err)
		}
	}
}
