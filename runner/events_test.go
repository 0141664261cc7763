package runner

import (
	"context"
	"testing"

	"github.com/agentd-dev/agentd/tools/respserver"
)

// The first request of a resumed run names the response it continues from,
// as every later request does, with and without storage.
func TestResumedRequestNamesItsResponse(t *testing.T) {
	for _, mode := range historyModes {
		t.Run(mode.name, func(t *testing.T) {
			ts, srv, _ := setup(t, respserver.Call(`{"type":"type","text":"hi"}`), respserver.Final("done"))
			f := openLedger(t, t.TempDir())
			o := mode.opts()
			// The 5th checkpoint is the pending one of request 2 (request,
			// response, before and after the call come first).
			runToCrash(t, ts, o, CallOptions{}, f, 5)
			cp := lastCheckpoint(t, f)
			var first *Event
			o.Input = ""
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
