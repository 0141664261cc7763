package console

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/scaling"
)

// samplePNG is a w×h image of one colour.
func samplePNG(t testing.TB, w, h int, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// createRun creates the run record name in a fresh runs folder, as
// agentctl run does before its first step.
func createRun(t testing.TB, name string) (runs string, rec *runner.Record) {
	t.Helper()
	runs = t.TempDir()
	rec, err := runner.CreateRecord(filepath.Join(runs, name))
	if err != nil {
		t.Fatal(err)
	}
	return runs, rec
}

// writeRun writes a run record through runner.Record, as agentctl run
// does: a screenshot, then a safety-checked click, a drag and typed text
// drawn on it, then the final message.
func writeRun(t testing.TB, runs, id string) {
	t.Helper()
	writeRunShots(t, runs, id, samplePNG(t, 1280, 800, color.RGBA{R: 40, G: 90, B: 160, A: 255}),
		samplePNG(t, 1280, 800, color.RGBA{R: 60, G: 160, B: 90, A: 255}))
}

// dragPath is the recorded drag's path: not a straight line.
var dragPath = []actions.Point{{X: 100, Y: 100}, {X: 400, Y: 120}, {X: 420, Y: 300}, {X: 200, Y: 320}, {X: 300, Y: 200}}

// writeRunShots is writeRun with the two screenshots given (1280×800).
func writeRunShots(t testing.TB, runs, id string, shot1, shot2 []byte) {
	t.Helper()
	rec, err := runner.CreateRecord(filepath.Join(runs, id))
	if err != nil {
		t.Fatal(err)
	}
	rec.Note("start", map[string]any{"task": "Fill the pickup form", "model": "scripted", "max_steps": 10})
	tr := scaling.Transform{Screen: scaling.Size{W: 1440, H: 900}, Crop: scaling.Rect{W: 1440, H: 900}, Image: scaling.Size{W: 1280, H: 800}}
	now := time.Now()
	ev := func(e runner.Event) { e.Time = now; rec.Event(e) }
	usage := &runner.Usage{InputTokens: 1200, OutputTokens: 30, TotalTokens: 1230}
	ev(runner.Event{Kind: runner.EventRequest, Step: 1, MaxSteps: 10})
	ev(runner.Event{Kind: runner.EventResponse, Step: 1, ResponseID: "resp_1", CallIDs: []string{"call_1"}, Duration: runner.Duration(800 * time.Millisecond), Usage: usage})
	ev(runner.Event{Kind: runner.EventScreenshot, Step: 1, CallID: "call_1", Duration: runner.Duration(12 * time.Millisecond),
		Screenshot: &runner.ScreenshotEvent{Transform: tr, Bytes: 900, PNG: shot1}})
	ev(runner.Event{Kind: runner.EventRequest, Step: 2, MaxSteps: 10, CallIDs: []string{"call_1"}})
	ev(runner.Event{Kind: runner.EventResponse, Step: 2, ResponseID: "resp_2", CallIDs: []string{"call_2"}, Duration: runner.Duration(time.Second), Usage: usage})
	checks := []runner.SafetyCheck{{ID: "sc_1", Code: "malicious_instructions", Message: "check the page"}}
	ev(runner.Event{Kind: runner.EventApprovalAsked, Step: 2, CallID: "call_2", Approval: &runner.ApprovalEvent{Kind: runner.ApprovalSafetyChecks, Index: -1, Checks: checks}})
	rec.Note("approval_by", map[string]any{"call_id": "call_2", "kind": runner.ApprovalSafetyChecks, "by": "the console", "approved": true})
	ev(runner.Event{Kind: runner.EventApprovalAnswered, Step: 2, CallID: "call_2", Approval: &runner.ApprovalEvent{Kind: runner.ApprovalSafetyChecks, Index: -1, Checks: checks, Approved: true, Reason: "approved on the terminal"}})
	for i, s := range []string{"click left (640,400)", "drag (100,100)→(300,200) 5 points", "type 12 chars", "scroll (640,400) by (0,300)"} {
		var path []actions.Point
		if strings.HasPrefix(s, "drag") {
			path = dragPath
		}
		ev(runner.Event{Kind: runner.EventAction, Step: 2, CallID: "call_2", Duration: runner.Duration(3 * time.Millisecond),
			Action: &runner.ActionEvent{Index: i, Summary: s, Path: path, Result: computer.ActionResult{Index: i, OK: true}}})
	}
	ev(runner.Event{Kind: runner.EventScreenshot, Step: 2, CallID: "call_2", Duration: runner.Duration(15 * time.Millisecond),
		Screenshot: &runner.ScreenshotEvent{Transform: tr, Bytes: 900, PNG: shot2}})
	ev(runner.Event{Kind: runner.EventRequest, Step: 3, MaxSteps: 10, CallIDs: []string{"call_2"}})
	ev(runner.Event{Kind: runner.EventResponse, Step: 3, ResponseID: "resp_3", Duration: runner.Duration(500 * time.Millisecond), Usage: usage})
	ev(runner.Event{Kind: runner.EventFinal, Step: 3, Message: "The form is submitted."})
	res := &runner.RunResult{FinalMessage: "The form is submitted.", ResponseID: "resp_3", Steps: 3,
		CompletedCallIDs: []string{"call_1", "call_2"}, Usage: runner.Totals{Usage: *usage, Requests: 3}, Duration: 3 * time.Second}
	if err := rec.Finish(res, nil); err != nil {
		t.Fatal(err)
	}
}

// A record as this package writes it today (runner.RecordVersion) is read into steps:
// each step's actions on the screenshot the model chose them from, the
// approval and its answer, timings and tokens, the final message.
func TestReadRunCurrentVersion(t *testing.T) {
	runs := t.TempDir()
	writeRun(t, runs, "r1")
	run, err := readRun(filepath.Join(runs, "r1"), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if run.Version != runner.RecordVersion || run.Task != "Fill the pickup form" || !run.Ended || !run.OK || run.Steps != 3 || len(run.StepList) != 3 {
		t.Fatalf("run %+v", run.RunSummary)
	}
	if run.Usage == nil || run.Usage.TotalTokens != 1230 || run.FinalMessage != "The form is submitted." {
		t.Fatalf("end: usage %+v, final %q", run.Usage, run.FinalMessage)
	}
	st := run.StepList[1]
	if st.Shown == nil || st.Shown.File != "step-001.png" || st.Shown.Width != 1280 {
		t.Fatalf("step 2 is drawn on %+v, want step-001.png (what the model saw)", st.Shown)
	}
	if len(st.Approvals) != 1 || !st.Approvals[0].Answered || !st.Approvals[0].Approved || st.Approvals[0].Checks[0] != "malicious_instructions (sc_1)" || st.Approvals[0].By != "the console" {
		t.Fatalf("approvals %+v", st.Approvals)
	}
	wantMarks := []Mark{
		{Kind: "click", Button: "left", X: 640, Y: 400},
		{Kind: "drag", X: 100, Y: 100, X2: 300, Y2: 200, Path: []Point{{100, 100}, {400, 120}, {420, 300}, {200, 320}, {300, 200}}},
		{Kind: "label", Label: "type 12 chars"},
		{Kind: "scroll", X: 640, Y: 400, DY: 300},
	}
	for i, a := range st.Actions {
		if a.Mark == nil || !reflect.DeepEqual(*a.Mark, wantMarks[i]) {
			t.Errorf("action %d (%s): mark %+v, want %+v", i, a.Summary, a.Mark, wantMarks[i])
		}
	}
	if st.ResponseS != 1 || st.Usage.InputTokens != 1200 || run.StepList[2].Final != "The form is submitted." {
		t.Fatalf("step 2 timing/tokens %v %+v, step 3 final %q", st.ResponseS, st.Usage, run.StepList[2].Final)
	}
}

// Version 0 (no header line: every record written before the format had a
// version) is read the same way; a record cut short by a crash is read up
// to the cut; what is not a record is an error.
func TestReadRunOlderVersionsAndDamage(t *testing.T) {
	runs := t.TempDir()
	writeRun(t, runs, "r1")
	data, err := os.ReadFile(filepath.Join(runs, "r1", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	v0 := data[bytes.IndexByte(data, '\n')+1:]
	run, err := parseRun(bytes.NewReader(v0), "v0")
	if err != nil {
		t.Fatal(err)
	}
	if run.Version != 0 || run.Task != "Fill the pickup form" || len(run.StepList) != 3 || !run.OK {
		t.Fatalf("version 0 read as %+v", run.RunSummary)
	}
	// Version 1: no drag path; the drag is drawn from its summary.
	v1 := regexp.MustCompile(`"path":\[[^\]]*\],`).ReplaceAll(bytes.Replace(data, []byte(fmt.Sprintf(`"version":%d`, runner.RecordVersion)), []byte(`"version":1`), 1), nil)
	if run, err = parseRun(bytes.NewReader(v1), "v1"); err != nil {
		t.Fatal(err)
	}
	if m := run.StepList[1].Actions[1].Mark; run.Version != 1 || !reflect.DeepEqual(*m, Mark{Kind: "drag", X: 100, Y: 100, X2: 300, Y2: 200}) {
		t.Fatalf("version 1 (%d) drag read as %+v", run.Version, m)
	}
	cut := v0[:bytes.Index(v0, []byte(`"kind":"final"`))+5]
	run, err = parseRun(bytes.NewReader(cut), "cut")
	if err != nil {
		t.Fatal(err)
	}
	if run.Ended || len(run.StepList) != 3 || run.Steps != 3 {
		t.Fatalf("a cut record read as %+v with %d steps", run.RunSummary, len(run.StepList))
	}
	if _, err := parseRun(strings.NewReader("<html>"), "x"); err == nil {
		t.Fatal("HTML read as a record")
	}
}

func TestMarkOf(t *testing.T) {
	for _, c := range []struct {
		summary string
		want    *Mark
	}{
		{"click right (5,6) +shift", &Mark{Kind: "click", Button: "right", X: 5, Y: 6}},
		{"double_click (7,8)", &Mark{Kind: "double_click", X: 7, Y: 8}},
		{"move (1,2)", &Mark{Kind: "move", X: 1, Y: 2}},
		{"scroll (3,4) by (-10,0)", &Mark{Kind: "scroll", X: 3, Y: 4, DX: -10}},
		{"drag (1,1)→(9,9) 2 points", &Mark{Kind: "drag", X: 1, Y: 1, X2: 9, Y2: 9}},
		{"keypress ctrl+s", &Mark{Kind: "label", Label: "keypress ctrl+s"}},
		{"screenshot", nil},
		{"wait", nil},
		{"", nil},
	} {
		if got := markOf(c.summary); !reflect.DeepEqual(got, c.want) {
			t.Errorf("markOf(%q) = %+v, want %+v", c.summary, got, c.want)
		}
	}
}

// Version 3's takeover lines: the call a person's take over stopped, what
// of it did not run, and after the hand back who did what and their note;
// a hand back of another call is a take over of its own.
func TestTakeoverLines(t *testing.T) {
	rec := `{"kind":"record","version":3}
{"kind":"request","step":1}
{"kind":"takeover","step":1,"call_id":"c1","takeover":{"phase":"paused","not_run":["type 5 chars"],"ran":1}}
{"kind":"takeover","step":1,"call_id":"c1","takeover":{"phase":"handed_back","not_run":["type 5 chars"],"ran":1,"by":["the console"],"actions":["click left (1,2)","type 3 chars"],"notes":["done"],"orphaned":true}}
`
	run, err := parseRun(strings.NewReader(rec), "t")
	if err != nil {
		t.Fatal(err)
	}
	want := []Takeover{{CallID: "c1", NotRun: []string{"type 5 chars"}, HandedBack: true, Handback: computer.Handback{By: []string{"the console"},
		Actions: []string{"click left (1,2)", "type 3 chars"}, Notes: []string{"done"}, Orphaned: true}}}
	if run.Version != 3 || len(run.StepList) != 1 || !reflect.DeepEqual(run.StepList[0].Takeovers, want) {
		t.Fatalf("read %+v", run.StepList[0])
	}
}
