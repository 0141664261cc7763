//go:build linux

package runner_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// TestIterateStopReachesNoDesktop: on a real desktop (agentd on Xvfb, an X
// client recording every input event), a Toolset run stepped through with
// Iterate and stopped at the turn that clicks sends the desktop nothing and
// no further request, streamed or not; going on from that turn clicks.
func TestIterateStopReachesNoDesktop(t *testing.T) {
	bin := agentdtest.Binary(t)
	for _, tc := range []struct {
		name   string
		stream *runner.Streaming
		stop   bool
	}{{"stop", nil, true}, {"stop/stream", &runner.Streaming{}, true}, {"go on", nil, false}} {
		t.Run(tc.name, func(t *testing.T) {
			c, rec := desktopGuest(t, bin)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			srv, url := respserver.Start(respserver.Call(`{"type":"screenshot"}`),
				respserver.Call(`{"type":"click","x":320,"y":200}`, `{"type":"keypress","keys":["a"]}`),
				respserver.Final("done"))
			defer srv.Close()
			ts := runner.New(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-test")), c)
			defer ts.Close()
			it := ts.Iterate(ctx, runner.RunOptions{Model: "m", Input: "click", Stream: tc.stream}, runner.CallOptions{})
			for turn := range it.Turns() {
				if turn.Step == 2 {
					// Turn 1's screenshot is taken; nothing of turn 2 ran.
					rec.Sync(t)
					if evs := rec.Events(); len(evs) != 0 {
						t.Fatalf("turn 2 shown after the desktop received %v", evs)
					}
					if tc.stop {
						break
					}
				}
			}
			_, err := it.Result()
			if err := srv.Err(); err != nil {
				t.Fatal(err)
			}
			if !tc.stop {
				if err != nil {
					t.Fatal(err)
				}
				rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonPress }, 5*time.Second)
				return
			}
			if !errors.Is(err, runner.ErrStopped) || srv.Served() != 2 {
				t.Fatalf("err %v after %d requests", err, srv.Served())
			}
			rec.Sync(t)
			if evs := rec.Events(); len(evs) != 0 {
				t.Fatalf("the stopped run sent the desktop %v", evs)
			}
		})
	}
}
