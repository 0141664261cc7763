package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/internal/browsertest"
	"github.com/agentd-dev/agentd/runner"
	browsertool "github.com/agentd-dev/agentd/runner/browser"
	"github.com/agentd-dev/agentd/tools/exercise"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// fcall is a function call item with call_id "call_<id>".
func fcall(id, name string, args map[string]any) respserver.Item {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	it := respserver.FunctionCall(name, string(raw))
	it["call_id"] = "call_" + id
	return it
}

// The refs the scripted model uses: the driver numbers the form's controls
// in the order of the accessibility tree. The test checks below that the
// read_page output the model was sent really maps them to these labels.
var formRefs = map[string]string{"Name": "e1", "Date (YYYY-MM-DD)": "e2", "Pickup slot": "e3", "Fragile": "e4", "Submit": "e5"}

// TestRunnerDrivesGuestBrowser is the whole chain: a scripted model through
// the real openai-go SDK → runner → browser.Tool → BrowserToolset → guest
// client → agentd's websocket → Chromium on Xvfb → the form's server. The
// model reads the page, fills the form in one response and submits it;
// hover is confirmed with the string "true" and so refused; a lookalike
// host is refused by the URL policy before confirm; a ref of the previous
// document is stale and nothing is clicked.
func TestRunnerDrivesGuestBrowser(t *testing.T) {
	c := browsertest.StartGuest(t)
	d, err := c.Browser()
	if err != nil {
		t.Fatal(err)
	}
	srv := browsertest.FormServer(t)
	origin := browsertest.Origin(srv)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(origin, "http://"))
	lookalike := fmt.Sprintf("http://127.0.0.1.evil.test:%s/", port)

	var asked []browser.Member
	confirm := func(_ context.Context, req browser.ConsentRequest) (any, error) {
		asked = append(asked, req.Member)
		if req.Member == browser.Hover {
			return "true", nil
		}
		return true, nil
	}
	policy, err := browser.AllowOrigins(origin)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := browser.New(d, browser.WithConfirm(confirm), browser.WithURLPolicy(policy))
	if err != nil {
		t.Fatal(err)
	}

	null := any(nil)
	model, base := respserver.Start(
		respserver.Items(fcall("navigate", "navigate", map[string]any{"url": srv.URL(), "tab_id": null})),
		respserver.Items(fcall("read_page", "read_page", map[string]any{"filter": "interactive", "tab_id": null})),
		respserver.Items(
			fcall("name", "type", map[string]any{"text": exercise.PickupName, "target": formRefs["Name"], "tab_id": null}),
			fcall("date", "type", map[string]any{"text": "2025-03-14", "target": formRefs["Date (YYYY-MM-DD)"], "tab_id": null}),
			fcall("slot", "select_option", map[string]any{"target": formRefs["Pickup slot"], "values": []string{"Afternoon"}, "tab_id": null}),
			fcall("fragile", "click", map[string]any{"target": formRefs["Fragile"], "tab_id": null}),
			fcall("hover", "hover", map[string]any{"target": formRefs["Submit"], "tab_id": null}),
			fcall("submit", "click", map[string]any{"target": formRefs["Submit"], "tab_id": null}),
		),
		respserver.Items(fcall("lookalike", "navigate", map[string]any{"url": lookalike, "tab_id": null})),
		respserver.Items(fcall("again", "navigate", map[string]any{"url": srv.URL(), "tab_id": null})),
		respserver.Items(fcall("stale", "click", map[string]any{"target": formRefs["Submit"], "tab_id": null})),
		respserver.Final("Saved."),
	)
	defer model.Close()

	api := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("test"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := runner.NewRunner(api).Run(ctx, runner.RunOptions{Model: "test", Input: "Book the pickup", MaxSteps: 10,
		Tools: []runner.Tool{browsertool.NewTool(ts)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := model.Err(); err != nil {
		t.Fatalf("the API's rules were broken: %v", err)
	}
	if res.FinalMessage != "Saved." {
		t.Errorf("final message %q", res.FinalMessage)
	}

	recs, err := srv.Records()
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %+v (%v), want exactly one", recs, err)
	}
	if got := recs[0]; got.Name != exercise.PickupName || got.Date != "2025-03-14" || got.Slot != "Afternoon" || !got.Fragile {
		t.Errorf("record %+v", got)
	}

	outputs := functionOutputs(t, model.Requests())
	read := outputs[1]["call_read_page"]
	var r browser.BrowserReadV1
	if json.Unmarshal(read.Result, &r) != nil || !read.OK {
		t.Fatalf("read_page output %+v", read)
	}
	for _, e := range r.Elements {
		if want, ok := formRefs[e.Label]; ok && e.Ref != want {
			t.Errorf("read_page gave %s ref %s; the script used %s", e.Label, e.Ref, want)
		}
	}
	if len(r.Elements) != len(formRefs) {
		t.Errorf("read_page found %d controls, want %d: %+v", len(r.Elements), len(formRefs), r.Elements)
	}
	if h := outputs[2]["call_hover"]; h.OK || !strings.Contains(h.Error, "not approved") {
		t.Errorf("hover confirmed with \"true\": %+v, want refused", h)
	}
	if n := outputs[3]["call_lookalike"]; n.OK || !strings.Contains(n.Error, "URL policy") || n.State == nil || n.State.Tabs[0].Title != "Saved" {
		t.Errorf("navigate to %s: %+v, want refused by the URL policy with the saved page still shown", lookalike, n)
	}
	if s := outputs[5]["call_stale"]; s.OK || !strings.Contains(s.Error, "stale") {
		t.Errorf("click on a ref of the previous document: %+v, want the stale-ref error", s)
	}
	navigates := 0
	for _, m := range asked {
		if m == browser.Navigate {
			navigates++
		}
	}
	if navigates != 2 {
		t.Errorf("confirm asked for navigate %d times, want 2 (the lookalike never)", navigates)
	}
}

type output struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
	State  *browser.State  `json:"state"`
}

// functionOutputs decodes the function_call_outputs of each request that
// answered a turn (the first request answers none), by call_id.
func functionOutputs(t *testing.T, reqs []respserver.Request) []map[string]output {
	t.Helper()
	var out []map[string]output
	for _, rq := range reqs {
		var body struct {
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal(rq.Body, &body) != nil {
			continue
		}
		var items []struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Output any    `json:"output"`
		}
		if json.Unmarshal(body.Input, &items) != nil {
			continue
		}
		turn := map[string]output{}
		for _, it := range items {
			if it.Type != "function_call_output" {
				continue
			}
			text, ok := it.Output.(string)
			if !ok {
				t.Fatalf("output of %s is not text", it.CallID)
			}
			var o output
			if err := json.Unmarshal([]byte(text), &o); err != nil {
				t.Fatalf("output of %s: %v", it.CallID, err)
			}
			turn[it.CallID] = o
		}
		out = append(out, turn)
	}
	return out
}
