package respserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/scaling"
)

func post(t *testing.T, url string, body any, auth bool) (int, map[string]any) {
	t.Helper()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url+"responses", bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	if auth {
		req.Header.Set("Authorization", "Bearer sk-test")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("status %d, body not JSON: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

func dataURL(t *testing.T, w, h int) string {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

var computer = []any{map[string]any{"type": "computer"}}

func TestServerChecksRequests(t *testing.T) {
	s, url := Start(
		Turn{Actions: Call(`{"type":"screenshot"}`).Actions, SafetyChecks: []SafetyCheck{{ID: "sc_1", Code: "malicious_instructions"}}},
		Turn{Message: "done", ExpectImage: scaling.Size{W: 8, H: 8}},
	)
	defer s.Close()

	first := map[string]any{"model": "m", "input": "task", "tools": computer}
	if code, _ := post(t, url, first, false); code != http.StatusUnauthorized {
		t.Fatalf("no key: %d", code)
	}
	if code, body := post(t, url, map[string]any{"model": "m", "input": "task", "tools": []any{}}, true); code != 400 ||
		!strings.Contains(body["error"].(map[string]any)["message"].(string), `{"type":"computer"}`) {
		t.Fatalf("no computer tool: %d %v", code, body)
	}
	code, resp := post(t, url, first, true)
	if code != 200 || resp["object"] != "response" || resp["status"] != "completed" || !strings.HasPrefix(resp["id"].(string), "resp_") {
		t.Fatalf("first: %d %v", code, resp)
	}
	item := resp["output"].([]any)[0].(map[string]any)
	callID := item["call_id"].(string)
	if item["type"] != "computer_call" || !strings.HasPrefix(callID, "call_") || resp["usage"].(map[string]any)["total_tokens"].(float64) != 120 {
		t.Fatalf("first output: %v", resp)
	}

	answer := func(prev, call string, acks []any, detail, img string) map[string]any {
		return map[string]any{"model": "m", "tools": computer, "previous_response_id": prev, "input": []any{map[string]any{
			"type": "computer_call_output", "call_id": call, "acknowledged_safety_checks": acks,
			"output": map[string]any{"type": "computer_screenshot", "image_url": img, "detail": detail},
		}}}
	}
	ack := []any{map[string]any{"id": "sc_1"}}
	good := dataURL(t, 8, 8)
	for name, tc := range map[string]struct {
		body map[string]any
		want string
	}{
		"wrong previous":   {answer("resp_other", callID, ack, "original", good), "previous_response_id"},
		"unknown call":     {answer(resp["id"].(string), "call_x", ack, "original", good), "for unknown call"},
		"missing ack":      {answer(resp["id"].(string), callID, nil, "original", good), "acknowledged_safety_checks"},
		"detail":           {answer(resp["id"].(string), callID, ack, "high", good), "detail"},
		"not a PNG":        {answer(resp["id"].(string), callID, ack, "original", "data:image/png;base64,aGVsbG8="), "not a PNG"},
		"wrong image size": {answer(resp["id"].(string), callID, ack, "original", dataURL(t, 9, 8)), "expects 8x8"},
	} {
		code, body := post(t, url, tc.body, true)
		msg, _ := body["error"].(map[string]any)["message"].(string)
		if code != 400 || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %d %q, want 400 naming %q", name, code, msg, tc.want)
		}
	}
	if s.Served() != 1 {
		t.Fatal("a bad request advanced the script")
	}
	code, resp2 := post(t, url, answer(resp["id"].(string), callID, ack, "original", good), true)
	if code != 200 || resp2["previous_response_id"] != resp["id"] {
		t.Fatalf("good answer: %d %v", code, resp2)
	}
	if code, _ := post(t, url, first, true); code != 400 {
		t.Fatalf("after the script: %d", code)
	}
	if got := len(s.Violations()); got != 9 || s.Err() == nil {
		t.Fatalf("%d violations: %v", got, s.Violations())
	}
	if s.Attempts(1) != 7 {
		t.Fatalf("attempts(1) = %d", s.Attempts(1))
	}
}

func TestServerFailureInjection(t *testing.T) {
	s, url := Start(Turn{Message: "hi", Fail500: 1, NoUsage: true})
	defer s.Close()
	body := map[string]any{"model": "m", "input": "task", "tools": computer}
	if code, resp := post(t, url, body, true); code != 500 || resp["error"] == nil {
		t.Fatalf("first attempt: %d %v", code, resp)
	}
	code, resp := post(t, url, body, true)
	if code != 200 || resp["usage"] != nil {
		t.Fatalf("second attempt: %d %v", code, resp)
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Status != 500 || reqs[1].Attempt != 2 || reqs[1].ResponseID == "" {
		t.Fatalf("requests = %+v", reqs)
	}
}

// With store false a request re-sends the whole history: every earlier call
// must be answered there exactly once, by an output of its kind.
func TestStatelessHistoryAnswersEveryCall(t *testing.T) {
	s, url := Start(Call(`{"type":"screenshot"}`), Call(`{"type":"screenshot"}`), Turn{Message: "done"})
	defer s.Close()
	out := func(id string) map[string]any {
		return map[string]any{"type": "computer_call_output", "call_id": id,
			"output": map[string]any{"type": "computer_screenshot", "image_url": dataURL(t, 8, 8), "detail": "original"}}
	}
	req := func(input []any) map[string]any {
		return map[string]any{"model": "m", "tools": computer, "store": false, "input": input}
	}
	history := []any{map[string]any{"role": "user", "content": "task"}}
	for k := 0; k < 2; k++ {
		code, resp := post(t, url, req(history), true)
		if code != 200 {
			t.Fatalf("request %d: %d %v", k, code, resp)
		}
		item := resp["output"].([]any)[0].(map[string]any)
		history = append(history, item, out(item["call_id"].(string)))
	}
	first := history[2].(map[string]any)["call_id"].(string)
	for name, tc := range map[string]struct {
		input []any
		want  string
	}{
		"older output missing": {slices.Delete(slices.Clone(history), 2, 3), "history lacks the computer_call_output of " + first},
		"older output twice":   {append(slices.Clone(history), out(first)), "call " + first + " answered twice"},
		"older output of another kind": {append(slices.Delete(slices.Clone(history), 2, 3),
			map[string]any{"type": "function_call_output", "call_id": first, "output": "x"}), "for unknown call"},
	} {
		code, body := post(t, url, req(tc.input), true)
		e, _ := body["error"].(map[string]any)
		if msg, _ := e["message"].(string); code != 400 || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %d %v", name, code, body)
		}
	}
	if code, body := post(t, url, req(history), true); code != 200 {
		t.Fatalf("the whole history: %d %v", code, body)
	}
}

// A store-false request is measured as received (bytes, images, 1×1
// placeholders, calls and their outputs), and refused when a call in it has
// no output or the current screenshot is a placeholder.
func TestStatelessInputIsMeasured(t *testing.T) {
	s, url := Start(Call(`{"type":"screenshot"}`), Call(`{"type":"screenshot"}`), Turn{Message: "done"})
	defer s.Close()
	out := func(id, img string) map[string]any {
		return map[string]any{"type": "computer_call_output", "call_id": id,
			"output": map[string]any{"type": "computer_screenshot", "image_url": img, "detail": "original"}}
	}
	req := func(input []any) map[string]any {
		return map[string]any{"model": "m", "tools": computer, "store": false, "input": input}
	}
	dot := dataURL(t, 1, 1)
	history := []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "input_text", "text": "task"},
		map[string]any{"type": "input_image", "image_url": dataURL(t, 8, 8)}}}}
	var calls []string
	for k := 0; k < 2; k++ {
		code, resp := post(t, url, req(history), true)
		if code != 200 {
			t.Fatalf("request %d: %d %v", k, code, resp)
		}
		item := resp["output"].([]any)[0].(map[string]any)
		calls = append(calls, item["call_id"].(string))
		history = append(history, item, out(item["call_id"].(string), dataURL(t, 8, 8)))
	}
	fn := map[string]any{"type": "function_call", "call_id": "call_lost", "name": "f", "arguments": "{}"}
	// In this order: the check of the stats below takes the placeholder's
	// request as the one before the last.
	for _, tc := range []struct {
		name  string
		input []any
		want  string
	}{
		{"a call without its output", append(slices.Clone(history), fn), "call call_lost in the input has no output"},
		{"the current screenshot a placeholder", append(slices.Clone(history[:4]), out(calls[1], dot)),
			"its screenshot is a 1×1 placeholder"},
	} {
		code, body := post(t, url, req(tc.input), true)
		e, _ := body["error"].(map[string]any)
		if msg, _ := e["message"].(string); code != 400 || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %d %v", tc.name, code, body)
		}
	}
	// The older screenshot dropped: still a valid request.
	history[2] = out(calls[0], dot)
	if code, body := post(t, url, req(history), true); code != 200 {
		t.Fatalf("a placeholder for an older screenshot: %d %v", code, body)
	}
	reqs := s.Requests()
	got := reqs[len(reqs)-1].Input
	raw, _ := json.Marshal(history)
	if got.Bytes != len(raw) || got.Items != 5 || got.Images != 2 || got.Placeholders != 1 || !got.Current ||
		!slices.Equal(got.Calls, calls) || !slices.Equal(got.Answered, calls) {
		t.Fatalf("input stats %+v (%d bytes sent)", got, len(raw))
	}
	if bad := reqs[len(reqs)-2].Input; bad.Current {
		t.Fatalf("a placeholder last counts as current: %+v", bad)
	}
}
