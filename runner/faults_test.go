package runner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/tools/respserver"
)

// attemptTimeout bounds each HTTP attempt; the slow turn holds its answer
// for a minute, so the attempt times out.
const attemptTimeout = 300 * time.Millisecond

// TestHangupRetriedWithoutRepeatingActions: the model server drops the
// connection without an answer (a crash, a proxy); the SDK retries the
// request, and each action runs exactly once.
func TestHangupRetriedWithoutRepeatingActions(t *testing.T) {
	ts, srv, d := setup(t,
		respserver.Call(shot),
		respserver.Turn{Actions: respserver.Call(`{"type":"click","x":3,"y":4}`, `{"type":"type","text":"hi"}`).Actions, Hangup: 2},
		respserver.Final("done"))
	res, err := ts.Run(context.Background(), opts(), CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	if srv.Attempts(1) != 3 {
		t.Fatalf("the turn was tried %d times, want 3", srv.Attempts(1))
	}
	if got := d.kinds(); !slices.Equal(got, []string{"screenshot", "click", "type", "screenshot"}) {
		t.Fatalf("driver calls = %v: each action must run exactly once", got)
	}
	if res.FinalMessage != "done" {
		t.Fatalf("result %+v", res)
	}
}

// TestTimeoutStopsTheRun: the model server does not answer in time. The
// SDK does not retry a timed-out attempt (it may have been processed), so
// the run stops with an error naming the request and the timeout, and
// nothing runs after the last answered turn.
func TestTimeoutStopsTheRun(t *testing.T) {
	ts, srv, d := setupWith(t, []option.RequestOption{option.WithRequestTimeout(attemptTimeout)},
		respserver.Call(shot),
		respserver.Turn{Actions: respserver.Call(`{"type":"click","x":3,"y":4}`).Actions, Delay: time.Minute})
	_, err := ts.Run(context.Background(), opts(), CallOptions{})
	var re *RunError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "request 2 of 20") {
		t.Fatalf("err = %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the error does not say it timed out: %v", err)
	}
	if srv.Attempts(1) != 1 || srv.Served() != 1 {
		t.Fatalf("attempts %d, served %d: want 1 attempt, 1 served", srv.Attempts(1), srv.Served())
	}
	if got := d.kinds(); !slices.Equal(got, []string{"screenshot"}) {
		t.Fatalf("driver calls = %v", got)
	}
	if len(re.CompletedCallIDs) != 1 {
		t.Fatalf("completed %v", re.CompletedCallIDs)
	}
}

// TestServerErrorsExhaustedStopTheRun: a turn answered with 500 more times
// than the SDK retries stops the run; the actions of earlier turns ran once
// and nothing of the failing turn runs.
func TestServerErrorsExhaustedStopTheRun(t *testing.T) {
	ts, srv, d := setup(t,
		respserver.Call(shot),
		respserver.Call(`{"type":"click","x":1,"y":2}`),
		respserver.Turn{Actions: respserver.Call(`{"type":"click","x":3,"y":4}`).Actions, Fail500: 10})
	_, err := ts.Run(context.Background(), opts(), CallOptions{})
	var re *RunError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "request 3 of 20") {
		t.Fatalf("err = %v", err)
	}
	noViolations(t, srv)
	if srv.Attempts(2) != 3 {
		t.Fatalf("the failing turn was tried %d times, want 3 (1 + 2 retries)", srv.Attempts(2))
	}
	if got := d.kinds(); !slices.Equal(got, []string{"screenshot", "click", "screenshot"}) {
		t.Fatalf("driver calls = %v", got)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Fatal("the error shows the API key")
	}
}
