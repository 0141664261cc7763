package eval

import (
	"strings"
	"testing"
	"time"
)

// The throughput line: this invocation's trials only (a resumed
// evaluation's earlier results are left out), trials a minute over the
// wall time, and per trial the medians of the guest's start, the time
// beyond it, and its two parts.
func TestSummaryThroughput(t *testing.T) {
	rep := &Report{
		Results: []Result{
			{Task: "a", Trial: 1, Pass: true, Seconds: 100, GuestUp: 90, RunSeconds: 5}, // an earlier invocation's
			{Task: "a", Trial: 2, Pass: true, Seconds: 2.0, GuestUp: 0.5, RunSeconds: 1.0},
			{Task: "b", Trial: 1, Pass: false, Seconds: 3.0, GuestUp: 0.7, RunSeconds: 2.0},
			{Task: "b", Trial: 2, Pass: true, Seconds: 4.0, GuestUp: 0.6, RunSeconds: 3.2},
		},
		Ran: 3, Wall: 6 * time.Second, Parallel: 2,
	}
	var b strings.Builder
	PrintSummary(&b, "ev", rep)
	want := "throughput: 3 trials in 6s at --parallel 2: 30.0 trials/min; per trial (medians): guest up 600ms, beyond it 2.3s (run 2s, the rest 300ms)\n"
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("summary:\n%s\nwant it to end with:\n%s", b.String(), want)
	}
}
