package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd-dev/agentd/runner"
)

// readRecord returns the lines of the record in dir.
func readRecord(t *testing.T, dir string) []runner.RecordLine {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []runner.RecordLine
	if err := runner.ReadRecord(f, func(l *runner.RecordLine) error { lines = append(lines, *l); return nil }); err != nil {
		t.Fatal(err)
	}
	return lines
}

// shotFile checks that a screenshot line's file is on disk, whole.
func shotFile(t *testing.T, dir string, l runner.RecordLine) []byte {
	t.Helper()
	s := l.Screenshot
	if s == nil || s.File == "" {
		t.Fatalf("step %d: a screenshot line without its file: %+v", l.Step, l.Event)
	}
	data, err := os.ReadFile(filepath.Join(dir, s.File))
	if err != nil || len(data) != s.Bytes {
		t.Fatalf("step %d: %s holds %d bytes (%v), the line says %d", l.Step, s.File, len(data), err, s.Bytes)
	}
	return data
}

// TestJournal: lines added faster than a record is written come out
// complete and in order, each screenshot in its file; wait returns once
// all added are written; an event's parts changed by its sender after it
// was added (an approval asked, then answered) are written as they were.
func TestJournal(t *testing.T) {
	dir := t.TempDir()
	rec, err := runner.CreateRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	j := newJournal(rec)
	const steps = 300
	for i := 1; i <= steps; i++ {
		id := fmt.Sprintf("call_%d", i)
		j.add(runner.Event{Kind: runner.EventRequest, Step: i, CallIDs: []string{id}})
		ev := runner.ApprovalEvent{Kind: runner.ApprovalBeforeAction, Index: -1, Summary: id}
		j.add(runner.Event{Kind: runner.EventApprovalAsked, Step: i, CallID: id, Approval: &ev})
		ev.Approved, ev.Reason = true, "approved"
		j.add(runner.Event{Kind: runner.EventApprovalAnswered, Step: i, CallID: id, Approval: &ev})
		png := []byte(fmt.Sprintf("image of step %d", i))
		j.add(runner.Event{Kind: runner.EventScreenshot, Step: i, CallID: id, Screenshot: &runner.ScreenshotEvent{Bytes: len(png), PNG: png}})
		if i == steps/2 {
			j.wait()
			if n := len(readRecord(t, dir)); n != 1+4*i {
				t.Fatalf("after wait: %d lines, want %d", n, 1+4*i)
			}
		}
	}
	if err := j.finish(&runner.RunResult{Steps: steps}); err != nil {
		t.Fatal(err)
	}
	lines := readRecord(t, dir)
	if len(lines) != 1+4*steps+1 || lines[0].Version != runner.RecordVersion || lines[len(lines)-1].End == nil || lines[len(lines)-1].End.Steps != steps {
		t.Fatalf("%d lines (first %+v, last %+v), want the header, %d and the end", len(lines), lines[0], lines[len(lines)-1], 4*steps)
	}
	for i := 1; i <= steps; i++ {
		l := lines[1+4*(i-1):]
		id := fmt.Sprintf("call_%d", i)
		kinds := []runner.EventKind{runner.EventRequest, runner.EventApprovalAsked, runner.EventApprovalAnswered, runner.EventScreenshot}
		for k, kind := range kinds {
			if l[k].Kind != kind || l[k].Step != i {
				t.Fatalf("line %d: %s of step %d, want %s of step %d", 1+4*(i-1)+k, l[k].Kind, l[k].Step, kind, i)
			}
		}
		if a := l[1].Approval; a == nil || a.Approved || a.Reason != "" || a.Summary != id {
			t.Fatalf("step %d: the question is recorded as %+v, as it was asked", i, a)
		}
		if a := l[2].Approval; a == nil || !a.Approved || a.Reason != "approved" {
			t.Fatalf("step %d: the answer is recorded as %+v", i, a)
		}
		if data := shotFile(t, dir, l[3]); string(data) != fmt.Sprintf("image of step %d", i) {
			t.Fatalf("step %d: %s holds %q", i, l[3].Screenshot.File, data)
		}
	}
}

// TestRecordAfterQuickCalls: computer calls made as fast as a client can
// (each answered while its record may still be written) leave the
// session's record complete and in order. When a call is answered, every
// earlier call's lines and screenshot file are on disk; once the session
// ends, every call's are, and the end line after them.
func TestRecordAfterQuickCalls(t *testing.T) {
	c, _ := desktopGuest(t)
	dirs := make(chan string, 1)
	rc, stop := rawSession(t, c, Config{RecordDir: t.TempDir(), OnRecord: func(dir string) { dirs <- dir }})
	defer stop()
	const calls = 40
	var dir string
	for i := 1; i <= calls; i++ {
		args := fmt.Sprintf(`{"name":"computer","arguments":{"actions":[{"type":"move","x":%d,"y":%d}]}}`, 100+i, 200+i%2*100)
		line, err := rc.Call("tools/call", json.RawMessage(args))
		if err != nil || !bytes.Contains(line, []byte(`"type":"image"`)) || bytes.Contains(line, []byte(`"isError":true`)) {
			t.Fatalf("call %d: %v %.300s", i, err, line)
		}
		if i == 1 {
			dir = <-dirs
			continue
		}
		shots := 0
		for _, l := range readRecord(t, dir) {
			if l.Kind == runner.EventScreenshot && l.Step < i {
				shots++
				shotFile(t, dir, l)
			}
		}
		if shots != i-1 {
			t.Fatalf("call %d answered: %d screenshots of the %d calls before it are recorded", i, shots, i-1)
		}
	}
	stop()

	lines := readRecord(t, dir)
	if len(lines) != 2+3*calls+1 || lines[1].Kind != "start" {
		t.Fatalf("%d lines, want the header, the start note, %d and the end", len(lines), 3*calls)
	}
	for i := 1; i <= calls; i++ {
		l := lines[2+3*(i-1):]
		kinds := []runner.EventKind{runner.EventRequest, runner.EventAction, runner.EventScreenshot}
		for k, kind := range kinds {
			if l[k].Kind != kind || l[k].Step != i {
				t.Fatalf("line %d: %s of step %d, want %s of step %d", 2+3*(i-1)+k, l[k].Kind, l[k].Step, kind, i)
			}
		}
		if want := fmt.Sprintf("move (%d,%d)", 100+i, 200+i%2*100); l[1].Action == nil || l[1].Action.Summary != want {
			t.Fatalf("step %d: action %+v, want %s", i, l[1].Action, want)
		}
		shotFile(t, dir, l[2])
	}
	if end := lines[len(lines)-1].End; end == nil || end.Steps != calls {
		t.Fatalf("the last line %+v, want the end after %d steps", lines[len(lines)-1], calls)
	}
}
