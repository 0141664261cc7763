package runner

import (
	"context"
	"errors"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agentd-dev/agentd/tools/respserver"
)

// The first request of a resumed run names the response it continues from,
// as every later request does, with and without storage.
func TestResumedRequestNamesItsResponse(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		name := "previous_response_id"
		if stateless {
			name = "local history"
		}
		t.Run(name, func(t *testing.T) {
			ts, srv, _ := setup(t, respserver.Call(`{"type":"type","text":"hi"}`), respserver.Final("done"))
			dir := t.TempDir()
			f := openLedger(t, dir)
			// The 5th checkpoint is the pending one of request 2 (request,
			// response, before and after the call come first).
			o := opts()
			if stateless {
				o.Store = openai.Bool(false)
			}
			o.Ledger = &crashLedger{f: f, crashAt: 5}
			if _, err := ts.Run(context.Background(), o, CallOptions{}); !errors.Is(err, errCrash) {
				t.Fatalf("run: %v, want the simulated crash", err)
			}
			cp := (&crashLedger{f: f}).last(t)
			var first *Event
			o.Input, o.Ledger = "", nil
			o.OnEvent = func(e Event) {
				if first == nil {
					first = &e
				}
			}
			if _, err := ts.Resume(context.Background(), cp, o, CallOptions{}); err != nil {
				t.Fatal(err)
			}
			noViolations(t, srv)
			want := srv.Requests()[0].ResponseID
			if first == nil || first.Kind != EventRequest || first.Step != 2 || first.ResponseID != want {
				t.Fatalf("first event of the resumed run %+v, want request 2 of response %s", first, want)
			}
		})
	}
}
