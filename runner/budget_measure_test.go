package runner

import (
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// TestMeasureContextBudget measures the input bytes of each request of a
// long local-history run, without a budget and with one of 3 images and 200
// KB (AGENTD_MEASURE_BUDGET=steps; the figures are in the README).
func TestMeasureContextBudget(t *testing.T) {
	steps, _ := strconv.Atoi(prereq.OptIn(t, "AGENTD_MEASURE_BUDGET", "the context budget measurement (steps, e.g. 60)"))
	if steps < 2 {
		t.Fatalf("AGENTD_MEASURE_BUDGET=%q: want a number of steps, at least 2", os.Getenv("AGENTD_MEASURE_BUDGET"))
	}
	for _, budget := range []*ContextBudget{nil, {MaxImages: 3, MaxInputBytes: 200_000}} {
		name := "no budget"
		if budget != nil {
			name = "3 images, 200 KB"
		}
		t.Run(name, func(t *testing.T) {
			turns := []respserver.Turn{respserver.Call(shot)}
			for len(turns) < steps-1 {
				turns = append(turns, respserver.Call(`{"type":"click","x":5,"y":5}`))
			}
			turns = append(turns, respserver.Final("done"))
			ts, srv, d := setup(t, turns...)
			// An incompressible 180×180 screenshot of about 31 KiB, as in
			// TestMeasureLedgerGrowth.
			d.png, d.size.W, d.size.H = noisePNG(t, 180, 180), 180, 180
			o := opts()
			o.MaxSteps, o.Store, o.ContextBudget = steps, openai.Bool(false), budget
			if _, err := ts.Run(runCtx(), o, CallOptions{}); err != nil {
				t.Fatal(err)
			}
			noViolations(t, srv)
			var sizes []int
			total := 0
			for _, r := range srv.Requests() {
				sizes = append(sizes, r.Input.Bytes)
				total += r.Input.Bytes
			}
			last := sizes[len(sizes)-1]
			slices.Sort(sizes)
			t.Logf("%d requests: input median %s, last %s, max %s, all requests %s", len(sizes),
				kib(int64(sizes[len(sizes)/2])), kib(int64(last)), kib(int64(sizes[len(sizes)-1])), kib(int64(total)))
		})
	}
}
