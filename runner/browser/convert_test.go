package browser

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/runner"
)

// TestOutputParamImage checks an output with an image as the SDK sends it:
// [input_text, input_image] with every field of the image.
func TestOutputParamImage(t *testing.T) {
	detail := browser.DetailLow
	o := browser.Output{CallID: "call_1", Text: `{"ok":true}`, Image: &browser.Image{
		ImageURL: browser.Text("https://img.test/a.png"), FileID: browser.Text("file-2"), Detail: &detail,
		PromptCacheBreakpoint: &browser.CacheBreakpoint{Mode: "explicit"},
	}}
	wire, err := json.Marshal(OutputParam(o))
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, wire, `{"call_id":"call_1","output":[{"text":"{\"ok\":true}","type":"input_text"},`+
		`{"detail":"low","file_id":"file-2","image_url":"https://img.test/a.png","prompt_cache_breakpoint":{"mode":"explicit"},"type":"input_image"}],"type":"function_call_output"}`)
	text, err := json.Marshal(OutputParam(browser.Output{CallID: "call_2", Text: "x"}))
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, text, `{"call_id":"call_2","output":"x","type":"function_call_output"}`)
}

// sameJSON fails unless got and want are the same JSON value (key order
// aside).
func sameJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gs, _ := json.Marshal(g)
	ws, _ := json.Marshal(w)
	if string(gs) != string(ws) {
		t.Fatalf("got\n%s\nwant\n%s", gs, ws)
	}
}

// A browser call's event names the member and how it ended (an error only
// when it did not end ok), and never its arguments or what it read.
func TestCallEvent(t *testing.T) {
	for _, tc := range []struct {
		outcome browser.Outcome
		err     string
	}{{browser.OutcomeOK, ""}, {browser.OutcomeFailed, "failed"}, {browser.OutcomeRefused, "refused"}} {
		ev := CallEvent(browser.CallRecord{CallID: "call_1", Member: browser.Click, Outcome: tc.outcome,
			Err: errors.New("secret page text"), Duration: 3 * time.Millisecond})
		if ev.Kind != runner.EventFunction || ev.CallID != "call_1" || ev.Duration != runner.Duration(3*time.Millisecond) ||
			ev.Function == nil || ev.Function.Name != "click" || ev.Function.Error != tc.err {
			t.Fatalf("%s: event %+v (function %+v)", tc.outcome, ev, ev.Function)
		}
		if b, _ := json.Marshal(ev); strings.Contains(string(b), "secret") {
			t.Fatalf("%s: the event carries the call's error: %s", tc.outcome, b)
		}
	}
}
