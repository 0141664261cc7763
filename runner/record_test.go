package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/tools/respserver"
)

func TestRecord(t *testing.T) {
	ts, _, d := setup(t,
		respserver.Call(shot),
		respserver.Turn{Actions: respserver.Call(`{"type":"type","text":"my password"}`).Actions, SafetyChecks: []respserver.SafetyCheck{{ID: "sc_1", Code: "sensitive_domain"}}},
		respserver.Final("ok"))
	dir := filepath.Join(t.TempDir(), "runs", "r1")
	rec, err := CreateRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec.Note("start", map[string]string{"task": "type it"})
	o, calls := opts(), CallOptions{
		ApproveSafetyChecks: func(context.Context, CallInfo, []SafetyCheck) (any, error) { return true, nil },
	}
	o.OnEvent, o.OnDiagnostic = rec.Event, rec.Diagnostic
	res, err := ts.Run(context.Background(), o, calls)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Finish(res, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"step-001.png", "step-002.png"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(data, d.png) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("my password")) || bytes.Contains(data, []byte(testKey)) || bytes.Contains(data, []byte("iVBOR")) {
		t.Fatalf("the record holds typed text, the key or an inline image:\n%s", data)
	}
	var kinds []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var line struct {
			Kind       string `json:"kind"`
			Screenshot *struct {
				File string `json:"file"`
			} `json:"screenshot"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Screenshot != nil && line.Screenshot.File == "" {
			t.Fatal("a screenshot line does not name its file")
		}
		kinds = append(kinds, line.Kind)
	}
	got := strings.Join(kinds, " ")
	want := "record start request diagnostic response screenshot request diagnostic response approval_asked approval_answered action screenshot request diagnostic response final end"
	if got != want {
		t.Fatalf("lines:\n%s\nwant\n%s", got, want)
	}
	if _, err := CreateRecord(dir); err == nil {
		t.Fatal("a second record was written into the same folder")
	}
	// Private, as it shows the desktop: the folders it made 0700, its
	// files 0600.
	for _, p := range []string{filepath.Dir(dir), dir, filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "step-001.png")} {
		want := os.FileMode(0o600)
		if p == dir || p == filepath.Dir(dir) {
			want = 0o700
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", p, fi.Mode(), err, want)
		}
	}
}

func TestRecordFinishWithError(t *testing.T) {
	dir := t.TempDir()
	rec, err := CreateRecord(filepath.Join(dir, "r"))
	if err != nil {
		t.Fatal(err)
	}
	runErr := &RunError{Err: errors.New("boom"), AttemptedCallIDs: []string{"call_a"}}
	if err := rec.Finish(nil, runErr); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "r", "events.jsonl"))
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	var head, end map[string]any
	if len(lines) != 2 || json.Unmarshal(lines[0], &head) != nil || json.Unmarshal(lines[1], &end) != nil {
		t.Fatalf("want the header and the end line, got:\n%s", data)
	}
	if head["kind"] != "record" || head["version"] != float64(RecordVersion) {
		t.Fatalf("header = %v", head)
	}
	if end["ok"] != false || !strings.Contains(end["error"].(string), "boom") || end["attempted_call_ids"] == nil {
		t.Fatalf("end = %v", end)
	}
}

func TestTerminalApprover(t *testing.T) {
	call := CallInfo{CallID: "call_1", Actions: []actions.Action{{Type: actions.TypeText, Text: "secret"}}}
	checks := []SafetyCheck{{ID: "sc", Code: "malicious_instructions", Message: "evil \x1b]0;title\x07 text"}}
	ask := func(input string, ctx context.Context) (any, error, string) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		out := &agentdtest.SyncBuffer{}
		p := &TerminalApprover{in: r, out: out, interactive: true}
		go func() {
			// Answer only once the question is out.
			for !strings.Contains(out.String(), "[y/N]") && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			_, _ = io.WriteString(w, input)
			if input != "" {
				return
			}
			w.Close()
		}()
		v, err := p.ApproveSafetyChecks(ctx, call, checks)
		w.Close()
		return v, err, out.String()
	}
	if v, err, out := ask("y\n", context.Background()); v != true || err != nil {
		t.Fatalf("y: %v %v", v, err)
	} else if strings.Contains(out, "\x1b") || strings.Contains(out, "secret") || !strings.Contains(out, "type 6 chars") {
		t.Fatalf("question = %q", out)
	}
	for _, in := range []string{"n\n", "\n", "yep\n"} {
		if v, err, _ := ask(in, context.Background()); v == true || err != nil {
			t.Fatalf("%q: %v %v", in, v, err)
		}
	}
	if v, err, _ := ask("", context.Background()); v == true || err == nil {
		t.Fatalf("end of input: %v %v", v, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if v, err, _ := ask("y\n", ctx); v == true || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v %v", v, err)
	}

	// Withdrawn by the run, which says why (a person took the desktop
	// over): the terminal says so too.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	shown := &agentdtest.SyncBuffer{}
	p := &TerminalApprover{in: r, out: shown, interactive: true}
	wctx, withdraw := context.WithCancelCause(context.Background())
	go func() {
		for !strings.Contains(shown.String(), "[y/N]") {
			time.Sleep(time.Millisecond)
		}
		withdraw(ErrQuestionStale)
	}()
	click := actions.Action{Type: actions.Click, X: 1, Y: 2, Button: actions.Left}
	v, err := p.ApproveAction(wctx, ActionInfo{CallID: "call_2", Action: click, Actions: []actions.Action{click}})
	if v == true || !errors.Is(err, context.Canceled) || !strings.Contains(shown.String(), "withdrawn: a person took over the desktop") {
		t.Fatalf("withdrawn: %v %v %q", v, err, shown.String())
	}

	// Not a terminal: refused without asking.
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	if v, err := NewTerminalApprover(f, &out).ApproveSafetyChecks(context.Background(), call, checks); v == true || !errors.Is(err, ErrNoTerminal) || out.Len() != 0 {
		t.Fatalf("/dev/null: %v %v %q", v, err, out.String())
	}
}

// TestRecordPrepareShot: a screenshot written into the spare PrepareShot
// made is its step's file, private, with nothing else left in the folder;
// a spare left unused is removed by Finish, and one a crash left behind by
// OpenRecord.
func TestRecordPrepareShot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	rec, err := CreateRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := func() []string {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	png := []byte("\x89PNG not really")
	rec.PrepareShot()
	rec.PrepareShot() // one spare at a time
	if got := files(); len(got) != 2 {
		t.Fatalf("after PrepareShot: %v, want events.jsonl and one spare", got)
	}
	rec.Event(Event{Kind: EventScreenshot, Step: 1, Screenshot: &ScreenshotEvent{PNG: png}})
	rec.Event(Event{Kind: EventScreenshot, Step: 1, Screenshot: &ScreenshotEvent{PNG: png}}) // no spare: a file of its own
	if got := strings.Join(files(), " "); got != "events.jsonl step-001-2.png step-001.png" {
		t.Fatalf("after two screenshots: %s", got)
	}
	for _, name := range []string{"step-001.png", "step-001-2.png"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if data, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(data, png) || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %q, mode %v", name, data, fi.Mode())
		}
	}
	rec.PrepareShot()
	if err := rec.Finish(nil, nil); err != nil {
		t.Fatal(err)
	}
	rec.PrepareShot() // after Finish: nothing
	if got := strings.Join(files(), " "); got != "events.jsonl step-001-2.png step-001.png" {
		t.Fatalf("after Finish: %s", got)
	}

	crashed, err := os.CreateTemp(dir, spareShot)
	if err != nil {
		t.Fatal(err)
	}
	crashed.Close()
	rec, err = OpenRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Finish(nil, nil)
	if got := strings.Join(files(), " "); got != "events.jsonl step-001-2.png step-001.png" {
		t.Fatalf("OpenRecord left: %s", got)
	}
}
