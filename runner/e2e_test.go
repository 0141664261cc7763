//go:build linux

package runner_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/desktoptest"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/tools/respserver"
)

const e2eToken = "runner-e2e-token-0123456789abcdef"

// TestServerToolFailureNothingReachesTheDesktop: on a real desktop (agentd
// on Xvfb, an X client recording every input event), a response whose
// server tool result failed or is still in progress stops before its
// computer call: the desktop receives nothing. With the result completed,
// the same response clicks.
func TestServerToolFailureNothingReachesTheDesktop(t *testing.T) {
	bin := agentdtest.Binary(t)
	for _, status := range []string{"failed", "in_progress", "completed"} {
		t.Run(status, func(t *testing.T) {
			c, rec := desktopGuest(t, bin)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			srv, url := respserver.Start(respserver.Call(`{"type":"screenshot"}`),
				respserver.Items(respserver.ComputerCall(`{"type":"click","x":320,"y":200}`, `{"type":"keypress","keys":["a"]}`),
					respserver.ServerItem("web_search_call", status, nil)),
				respserver.Final("done"))
			defer srv.Close()
			ts := runner.New(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-test")), c)
			defer ts.Close()
			search, err := runner.ServerTool(responses.ToolUnionParam{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}})
			if err != nil {
				t.Fatal(err)
			}
			rec.Clear()
			_, err = ts.Run(ctx, runner.RunOptions{Model: "m", Input: "search, then click", Tools: []runner.Tool{search}}, runner.CallOptions{})
			if err := srv.Err(); err != nil {
				t.Fatal(err)
			}
			if status == "completed" {
				if err != nil {
					t.Fatal(err)
				}
				rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonPress }, 5*time.Second)
				return
			}
			if err == nil {
				t.Fatal("the run went on past a server tool result that is not completed")
			}
			rec.Sync(t)
			if evs := rec.Events(); len(evs) != 0 {
				t.Fatalf("the desktop received %v", evs)
			}
		})
	}
}

// eagerDesktop starts agentd on a fresh Xvfb with an X event recorder and
// returns a toolset on it whose real SDK client talks to a respserver
// playing turns.
func eagerDesktop(t *testing.T, turns ...respserver.Turn) (*runner.Toolset, *respserver.Server, *xrecorder.Recorder) {
	t.Helper()
	c, rec := desktopGuest(t, agentdtest.Binary(t))
	ts, srv := eagerToolset(t, c, turns...)
	return ts, srv, rec
}

// eagerToolset is a toolset on c whose real SDK client talks to a
// respserver playing turns.
func eagerToolset(t *testing.T, c *guest.Client, turns ...respserver.Turn) (*runner.Toolset, *respserver.Server) {
	t.Helper()
	srv, url := respserver.Start(turns...)
	t.Cleanup(srv.Close)
	return runner.New(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-test"), option.WithMaxRetries(0)), c), srv
}

// desktopGuest starts agentd (bin, from agentdtest.Binary) on a fresh Xvfb
// with an X event recorder.
func desktopGuest(t *testing.T, bin string) (*guest.Client, *xrecorder.Recorder) {
	t.Helper()
	d := desktoptest.Start(t, bin, 640, 400, e2eToken, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := guest.Dial(ctx, d.Addr, e2eToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, d.Rec
}

// TestEagerClickBeforeTheResponseEnds: with Eager, a completed click
// reaches the real desktop while the response is still arriving: the
// server holds the stream after the call's item until the X event
// recorder has seen the click.
func TestEagerClickBeforeTheResponseEnds(t *testing.T) {
	var rec *xrecorder.Recorder
	ready := make(chan struct{})
	turn := respserver.Items(respserver.ComputerCall(`{"type":"click","x":320,"y":200,"button":"left"}`), respserver.Message("clicked", "commentary"))
	turn.Stream.AfterItem = func(i int) error {
		if i != 0 {
			return nil
		}
		<-ready
		pressed := func(evs []xrecorder.Event) bool {
			return slices.ContainsFunc(evs, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonPress })
		}
		if _, ok := rec.Await(pressed, 20*time.Second); !ok {
			return errors.New("the desktop saw no click while the stream was held")
		}
		return nil
	}
	ts, srv, r := eagerDesktop(t, respserver.Call(`{"type":"screenshot"}`), turn, respserver.Final("done"))
	rec = r
	rec.Clear()
	close(ready)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := ts.Run(ctx, runner.RunOptions{Model: "m", Input: "click", Stream: &runner.Streaming{Eager: true}}, runner.CallOptions{})
	if err != nil || res.FinalMessage != "done" {
		t.Fatalf("res %+v err %v", res, err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestMeasureEagerStepLatency (AGENTD_MEASURE_EAGER=rounds) times one step
// on a real desktop, with and without Eager: a scripted stream sends 3
// computer calls 200 ms apart and ends 300 ms after the last. It reports the
// medians of the time from the step's request to the last call's answer
// (all actions done: the saving approaches the tail) and to the next
// request (which needs the complete response: eager saves only the
// execution it overlapped); it asserts nothing about time.
func TestMeasureEagerStepLatency(t *testing.T) {
	rounds, _ := strconv.Atoi(prereq.OptIn(t, "AGENTD_MEASURE_EAGER", "the eager step latency measurement (rounds)"))
	if rounds <= 0 {
		t.Fatalf("AGENTD_MEASURE_EAGER=%q: want a number of rounds", os.Getenv("AGENTD_MEASURE_EAGER"))
	}
	c, _ := desktopGuest(t, agentdtest.Binary(t))
	// with/without: request to the next request; *Acts: request to the
	// last call's answer (its effects done).
	var with, without, withActs, withoutActs []time.Duration
	for k := range 2 * rounds {
		step := respserver.Items(
			respserver.ComputerCall(`{"type":"move","x":100,"y":100}`),
			respserver.ComputerCall(`{"type":"move","x":200,"y":150}`),
			respserver.ComputerCall(`{"type":"move","x":300,"y":200}`))
		step.Stream = respserver.Streaming{ItemDelay: 200 * time.Millisecond, TailDelay: 300 * time.Millisecond}
		ts, srv := eagerToolset(t, c, respserver.Call(`{"type":"screenshot"}`), step, respserver.Final("done"))
		eager := k%2 == 0
		var requests []time.Time
		var lastShot time.Time
		o := runner.RunOptions{Model: "m", Input: "move", Stream: &runner.Streaming{Eager: eager}}
		o.OnEvent = func(ev runner.Event) {
			switch {
			case ev.Kind == runner.EventRequest:
				requests = append(requests, ev.Time)
			case ev.Kind == runner.EventScreenshot && ev.Step == 2:
				lastShot = ev.Time
			}
		}
		if _, err := ts.Run(context.Background(), o, runner.CallOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := srv.Err(); err != nil {
			t.Fatal(err)
		}
		d, a := requests[2].Sub(requests[1]), lastShot.Sub(requests[1])
		if eager {
			with, withActs = append(with, d), append(withActs, a)
		} else {
			without, withoutActs = append(without, d), append(withoutActs, a)
		}
	}
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	mw, mo := median(with), median(without)
	aw, ao := median(withActs), median(withoutActs)
	t.Logf("median of %d (stream: 3 calls 200ms apart, tail 300ms): request to last action done: without eager %v, with eager %v (saving %v); request to next request: without %v, with %v (saving %v)",
		rounds, ms(ao), ms(aw), ms(ao-aw), ms(mo), ms(mw), ms(mo-mw))
}
