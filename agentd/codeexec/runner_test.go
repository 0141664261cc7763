//go:build linux

package codeexec_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/codetool"
	"github.com/agentd-dev/agentd/tools/respserver"
)

func codeCall(code string) respserver.Item {
	args, _ := json.Marshal(map[string]string{"code": code})
	return respserver.FunctionCall(codetool.Name, string(args))
}

// outputsOf returns the function_call_output items a request carried.
func outputsOf(t *testing.T, body json.RawMessage) []map[string]any {
	t.Helper()
	var req struct {
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var items []map[string]any
	_ = json.Unmarshal(req.Input, &items)
	var outs []map[string]any
	for _, it := range items {
		if it["type"] == "function_call_output" {
			outs = append(outs, it)
		}
	}
	return outs
}

// TestCodeModeRun: the runner's exec_py tool, through the real SDK and the
// scripted model, runs code in the real worker: a helper and a variable of
// the first call serve the second, which clicks through the scaled view;
// each answer carries the text and the images at detail original.
func TestCodeModeRun(t *testing.T) {
	d := newDesk(t)
	d.client.SetView(wire.View{Width: 1280, Height: 800, Fit: true})
	if _, err := d.client.Screenshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv, url := respserver.Start(
		respserver.Items(codeCall("pyautogui.PAUSE = 0\ntarget = (640, 400)\ndef go(p):\n    pyautogui.click(*p)\n    return pyautogui.position()\ndisplay(pyautogui.screenshot())\nprint('ready')")),
		respserver.Items(codeCall("print(go(target))")),
		respserver.Final("done"),
	)
	defer srv.Close()
	client := respserver.Client(url)
	var asked []codetool.CallInfo
	tool := codetool.New(d.client, codetool.Options{BeforeCode: func(_ context.Context, c codetool.CallInfo) (any, error) {
		asked = append(asked, c)
		return true, nil
	}})
	var events []runner.Event
	res, err := runner.NewRunner(client).Run(context.Background(), runner.RunOptions{Model: "gpt-test", Input: "click the middle",
		Tools: []runner.Tool{tool}, OnEvent: func(e runner.Event) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if res.FinalMessage != "done" || len(asked) != 2 || !strings.Contains(asked[1].Code, "go(target)") {
		t.Fatalf("result %+v, asked %+v", res, asked)
	}
	ev := d.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonRelease }, 5e9)
	if ev.X != 720 || ev.Y != 450 {
		t.Fatalf("(640, 400) of the 1280×800 view clicked (%d, %d), want (720, 450)", ev.X, ev.Y)
	}
	reqs := srv.Requests()
	first, second := outputsOf(t, reqs[1].Body), outputsOf(t, reqs[2].Body)
	if len(first) != 1 || len(second) != 1 {
		t.Fatalf("outputs %v / %v", first, second)
	}
	parts, _ := first[0]["output"].([]any)
	if len(parts) != 2 {
		t.Fatalf("first output: %v", first[0])
	}
	text, _ := parts[0].(map[string]any)
	img, _ := parts[1].(map[string]any)
	if !strings.Contains(text["text"].(string), "ready") || img["type"] != "input_image" || img["detail"] != "original" ||
		!strings.HasPrefix(img["image_url"].(string), "data:image/png;base64,") {
		t.Fatalf("first output: %v / %v", text, img["detail"])
	}
	parts, _ = second[0]["output"].([]any)
	if text, _ := parts[0].(map[string]any); text["text"] != "Point(x=640, y=400)\n" {
		t.Fatalf("second output: %v", parts)
	}
	var codeEvents int
	for _, e := range events {
		if e.Kind == runner.EventCode {
			codeEvents++
		}
	}
	if codeEvents != 2 {
		t.Fatalf("%d code events, want 2", codeEvents)
	}
}

// TestCodeModeRefusedAndLost: a refused call runs nothing and stops the
// run; a call that times out tells the model its namespace is lost.
func TestCodeModeRefusedAndLost(t *testing.T) {
	d := newDesk(t)
	srv, url := respserver.Start(respserver.Items(codeCall("pyautogui.click(5, 5)")))
	defer srv.Close()
	client := respserver.Client(url)
	tool := codetool.New(d.client, codetool.Options{BeforeCode: func(context.Context, codetool.CallInfo) (any, error) { return "yes", nil }})
	_, err := runner.NewRunner(client).Run(context.Background(), runner.RunOptions{Model: "m", Input: "x", Tools: []runner.Tool{tool}})
	var ae *runner.ApprovalError
	if !errors.As(err, &ae) || ae.Kind != runner.ApprovalCode {
		t.Fatalf("refused call: %v", err)
	}
	d.rec.Sync(t)
	if b := buttons(d.rec.Events()); len(b) != 0 {
		t.Fatalf("a refused call clicked: %v", b)
	}

	srv2, url2 := respserver.Start(
		respserver.Items(codeCall("v = 1\nwhile True: pass")),
		respserver.Items(codeCall("print(v)")),
		respserver.Final("ok"))
	defer srv2.Close()
	client = respserver.Client(url2)
	tool = codetool.New(d.client, codetool.Options{Deadline: 500e6})
	if _, err := runner.NewRunner(client).Run(context.Background(), runner.RunOptions{Model: "m", Input: "x", Tools: []runner.Tool{tool}}); err != nil {
		t.Fatal(err)
	}
	reqs := srv2.Requests()
	lost, _ := outputsOf(t, reqs[1].Body)[0]["output"].([]any)
	fresh, _ := outputsOf(t, reqs[2].Body)[0]["output"].([]any)
	lostText := lost[0].(map[string]any)["text"].(string)
	freshText := fresh[0].(map[string]any)["text"].(string)
	if !strings.Contains(lostText, "deadline of 500ms") || !strings.Contains(lostText, "the namespace is lost") ||
		!strings.HasPrefix(freshText, "[this call ran in a fresh namespace") || !strings.Contains(freshText, "NameError") {
		t.Fatalf("timed out: %q\nnext: %q", lostText, freshText)
	}
}
