package runner

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/scaling"
	"github.com/agentd-dev/agentd/tools/respserver"
)

func TestUnclaimedItemStopsTheRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		item respserver.Item
		want string
	}{
		{"server tool not declared", respserver.ServerItem("web_search_call", "completed", nil), `type "web_search_call"`},
		{"shell call", respserver.Item{"type": "shell_call", "call_id": "call_sh", "action": map[string]any{"commands": []any{"ls"}}}, `type "shell_call"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The computer call comes first: nothing of the response runs.
			ts, srv, d := setup(t, respserver.Call(shot), respserver.Items(respserver.ComputerCall(`{"type":"wait"}`), tc.item))
			_, err := ts.Run(context.Background(), opts(), CallOptions{})
			noViolations(t, srv)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "no tool of the run handles") {
				t.Fatalf("err = %v, want it to name %s", err, tc.want)
			}
			if got := d.kinds(); !slices.Equal(got, []string{"screenshot"}) {
				t.Fatalf("driver calls = %v", got)
			}
		})
	}
}

func TestCommentaryIsNotAFinalMessage(t *testing.T) {
	// A commentary message beside a call does not end the run; the final
	// answer does.
	ts, srv, d := setup(t,
		respserver.Items(respserver.Message("Let me look at the screen.", "commentary"), respserver.ComputerCall(shot)),
		respserver.Items(respserver.Message("Thinking aloud", "commentary"), respserver.Message("All done.", "final_answer")))
	res, err := ts.Run(context.Background(), opts(), CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	if res.FinalMessage != "All done." || len(d.Calls()) != 1 {
		t.Fatalf("result %+v, driver %v", res, d.kinds())
	}

	// A response with only commentary has no final message.
	ts2, _, _ := setup(t, respserver.Items(respserver.Message("Working on it", "commentary")))
	if _, err := ts2.Run(context.Background(), opts(), CallOptions{}); err == nil || !strings.Contains(err.Error(), "neither a local call nor a final message") {
		t.Fatalf("commentary only: err = %v", err)
	}
}

func TestResponseStatusStopsTheRun(t *testing.T) {
	for _, tc := range []struct{ status, reason string }{
		{"incomplete", "max_output_tokens"},
		{"failed", "the model crashed"},
		{"in_progress", ""},
	} {
		t.Run(tc.status, func(t *testing.T) {
			ts, srv, d := setup(t, respserver.Call(shot),
				respserver.Turn{Actions: respserver.Call(`{"type":"click","x":1,"y":1}`).Actions, Status: tc.status, Reason: tc.reason})
			var diags []Diagnostic
			o := opts()
			o.OnDiagnostic = func(d Diagnostic) { diags = append(diags, d) }
			_, err := ts.Run(context.Background(), o, CallOptions{})
			noViolations(t, srv)
			if err == nil || !strings.Contains(err.Error(), `status "`+tc.status+`"`) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("err = %v", err)
			}
			if got := d.kinds(); !slices.Equal(got, []string{"screenshot"}) {
				t.Fatalf("driver calls = %v", got)
			}
			if len(diags) != 2 || diags[1].Reason != tc.status {
				t.Fatalf("diagnostics = %+v, want the second to say %s", diags, tc.status)
			}
		})
	}
}

func TestDiagnosticsCarryEveryCallID(t *testing.T) {
	ts, srv, _ := setup(t,
		respserver.Items(respserver.ComputerCall(shot), respserver.ComputerCall(shot)),
		respserver.Turn{Message: "done", Fail500: 10})
	var diags []Diagnostic
	o := opts()
	o.OnDiagnostic = func(d Diagnostic) { diags = append(diags, d) }
	_, err := ts.Run(context.Background(), o, CallOptions{})
	noViolations(t, srv)
	if err == nil {
		t.Fatal("the run succeeded against a failing server")
	}
	if len(diags) != 2 || len(diags[0].CallIDs) != 2 || diags[0].CallID != diags[0].CallIDs[0] || diags[0].Reason != "completed" {
		t.Fatalf("diagnostics = %+v", diags)
	}
	if diags[1].Reason != "error" || diags[1].Usage != nil {
		t.Fatalf("the failed request's record = %+v", diags[1])
	}
}

// TestCallbacksGetDeepCopies: a callback that changes what it is shown
// cannot change the validated action that runs.
func TestCallbacksGetDeepCopies(t *testing.T) {
	ts, srv, d := setup(t, respserver.Call(shot),
		respserver.Turn{Actions: respserver.Call(`{"type":"click","x":5,"y":6,"keys":["shift"]}`,
			`{"type":"drag","path":[{"x":1,"y":1},{"x":9,"y":9}],"keys":["ctrl"]}`).Actions,
			SafetyChecks: []respserver.SafetyCheck{{ID: "sc_1", Code: "c", Message: "m"}}},
		respserver.Final("done"))
	o, approvals := opts(), CallOptions{
		ApproveSafetyChecks: func(_ context.Context, call CallInfo, checks []SafetyCheck) (any, error) {
			call.Actions[0].Keys[0] = "alt"
			call.Actions[1].Path[1] = actions.Point{X: 63, Y: 39}
			checks[0].ID = "sc_forged"
			return true, nil
		},
		BeforeAction: func(_ context.Context, a ActionInfo) (any, error) {
			if len(a.Action.Keys) > 0 {
				a.Action.Keys[0] = "super"
			}
			if len(a.Action.Path) > 0 {
				a.Action.Path[0] = actions.Point{X: 0, Y: 0}
			}
			return true, nil
		},
	}
	if _, err := ts.Run(context.Background(), o, approvals); err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv) // the acknowledged check is still sc_1
	calls := d.Calls()
	click, drag := calls[1].Action, calls[2].Action
	if !slices.Equal(click.Keys, []string{"shift"}) || !slices.Equal(drag.Keys, []string{"ctrl"}) ||
		!slices.Equal(drag.Path, []actions.Point{{X: 1, Y: 1}, {X: 9, Y: 9}}) {
		t.Fatalf("a callback changed what ran: click %+v, drag %+v", click, drag)
	}
}

// TestExecuteImageSpace: Execute checks coordinates against the image space
// the model saw: the caller's own screenshot, or the last one a Run sent.
func TestExecuteImageSpace(t *testing.T) {
	click := decodeCall(t, `{"type":"computer_call","id":"cu_1","call_id":"call_1","status":"completed",
		"pending_safety_checks":[],"actions":[{"type":"click","x":60,"y":30}]}`)

	// The caller took the screenshot itself and says its size.
	d := newFakeDriver(t, 64, 40)
	ts := New(openai.NewClient(), computer.Sequential(d))
	if _, err := ts.Execute(context.Background(), click, CallOptions{ImageSpace: scaling.Size{W: 64, H: 40}}, nil); err != nil {
		t.Fatalf("with the caller's image space: %v", err)
	}
	// A point outside the caller's image is still refused.
	if _, err := New(openai.NewClient(), computer.Sequential(d)).Execute(context.Background(), click, CallOptions{ImageSpace: scaling.Size{W: 32, H: 20}}, nil); err == nil {
		t.Fatal("a point outside the caller's image was accepted")
	}

	// After a Run, Execute goes on in the image the run sent last.
	ts2, srv, d2 := setup(t, respserver.Call(shot), respserver.Final("done"))
	if _, err := ts2.Run(context.Background(), opts(), CallOptions{}); err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	if _, err := ts2.Execute(context.Background(), click, CallOptions{}, nil); err != nil {
		t.Fatalf("Execute after Run: %v", err)
	}
	if got := d2.kinds(); !slices.Equal(got, []string{"screenshot", "click", "screenshot"}) {
		t.Fatalf("driver calls = %v", got)
	}
}

// TestRunFromInputItems: a run starts from the caller's screenshot, whose
// image space it is told, so the model's first call may click on it.
func TestRunFromInputItems(t *testing.T) {
	ts, srv, d := setup(t, respserver.Call(`{"type":"click","x":10,"y":10}`), respserver.Final("done"))
	img := "data:image/png;base64," + base64.StdEncoding.EncodeToString(newFakeDriver(t, 64, 40).png)
	o := RunOptions{Model: "gpt-5.4", Input: "click the button",
		InputItems: responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(
			responses.ResponseInputMessageContentListParam{{OfInputImage: &responses.ResponseInputImageParam{
				ImageURL: openai.String(img), Detail: responses.ResponseInputImageDetailOriginal}}},
			responses.EasyInputMessageRoleUser)},
	}
	if _, err := ts.Run(context.Background(), o, CallOptions{ImageSpace: scaling.Size{W: 64, H: 40}}); err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	if got := d.kinds(); !slices.Equal(got, []string{"click", "screenshot"}) {
		t.Fatalf("driver calls = %v", got)
	}
	body := string(srv.Requests()[0].Body)
	if !strings.Contains(body, `"input_image"`) || strings.Index(body, `"input_image"`) > strings.Index(body, "click the button") {
		t.Fatalf("first request input: the image, then the text: %.300s", body)
	}
}

// TestRawOutputIsOutputParam: the loop's hand-made JSON answer is the same
// item as Execute's typed one.
func TestRawOutputIsOutputParam(t *testing.T) {
	p := &plan{callID: "call_\"1", checks: []SafetyCheck{{ID: "sc_1", Code: "c", Message: "m <&>"}, {ID: "sc_2"}}}
	png := newFakeDriver(t, 5, 3).png
	for _, p := range []*plan{p, {callID: "call_2"}} {
		typed, _ := json.Marshal(outputParam(p, png))
		var a, b any
		if err := json.Unmarshal(typed, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(rawOutput(p, png), &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("raw %s\ntyped %s", rawOutput(p, png), typed)
		}
	}
}
