package runner

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/tools/respserver"
)

// A person's text queued during the last allowed request is never lost in
// silence: with a step to spare it is sent, one more request; at the limit
// the run ends with ErrStepLimit saying the text was not sent, and the
// text does not linger for a later run.
func TestAppendUserTextAtTheLastStep(t *testing.T) {
	for _, maxSteps := range []int{2, 3} {
		t.Run(strings.Repeat("I", maxSteps), func(t *testing.T) {
			var runs atomic.Int32
			srv, url := respserver.Start(respserver.Items(respserver.FunctionCall("note", `{}`)), respserver.Final("done"), respserver.Final("checked again"))
			t.Cleanup(srv.Close)
			ctl := &RunControl{}
			o := RunOptions{Model: "m", Input: "go", MaxSteps: maxSteps, Tools: []Tool{countingFunction(t, &runs)}, Control: ctl,
				OnEvent: func(e Event) {
					if e.Kind == EventRequest && e.Step == 2 {
						if err := ctl.AppendUserText("Check it again."); err != nil {
							t.Error(err)
						}
					}
				}}
			r := NewRunner(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey)))
			res, err := r.Run(context.Background(), o)
			noViolations(t, srv)
			if maxSteps == 2 {
				if !errors.Is(err, ErrStepLimit) || !strings.Contains(err.Error(), "1 text(s) queued by append_user_text were not sent") || srv.Served() != 2 {
					t.Fatalf("err %v, %d requests", err, srv.Served())
				}
				if ctl.pending() {
					t.Fatal("the unsent text stays queued for another run")
				}
				return
			}
			if err != nil || res.FinalMessage != "checked again" || res.Steps != 3 {
				t.Fatalf("res %+v err %v", res, err)
			}
			var b struct {
				Input []map[string]any `json:"input"`
			}
			_ = json.Unmarshal(srv.Requests()[2].Body, &b)
			if len(b.Input) != 1 || b.Input[0]["role"] != "user" || b.Input[0]["content"] != "Check it again." {
				t.Fatalf("third request input: %v", b.Input)
			}
		})
	}
}

// Text queued while an iterated run shows its final turn is sent: the run
// goes on with one more request.
func TestAppendUserTextAtAnIteratedFinalTurn(t *testing.T) {
	srv, url := respserver.Start(respserver.Final("done"), respserver.Final("checked the 14th"))
	t.Cleanup(srv.Close)
	ctl := &RunControl{}
	it := NewRunner(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey))).
		Iterate(context.Background(), RunOptions{Model: "m", Input: "go", Control: ctl})
	for turn := range it.Turns() {
		if turn.Final == "done" {
			if err := ctl.AppendUserText("Please check the 14th instead."); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, err := it.Result()
	noViolations(t, srv)
	if err != nil || res.FinalMessage != "checked the 14th" || res.Steps != 2 {
		t.Fatalf("res %+v err %v", res, err)
	}
}
