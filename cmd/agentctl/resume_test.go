package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/tools/respserver"
)

// A run that stopped (the model server failed past the SDK's retries) is
// continued with --resume from its record: every action runs once, the
// record says where the run resumed and ends well, and a finished run is not
// resumed again.
func TestRunResume(t *testing.T) {
	failing := respserver.Call(`{"type":"type","text":"once"}`)
	failing.Fail500 = 3 // the SDK's first try and its 2 retries
	srv, d, dir := harness(t,
		respserver.Call(`{"type":"screenshot"}`),
		respserver.Call(`{"type":"click","x":10,"y":10}`),
		failing,
		respserver.Final("done"))
	var out, errOut bytes.Buffer
	err := runCommand(context.Background(), []string{"--guest", "127.0.0.1:7000", "--max-steps", "5", "--record-dir", dir, "the task"},
		devNull(t), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("first run: %v\n%s", err, out.String())
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(runs) != 1 {
		t.Fatalf("records %v", runs)
	}
	if err := runCommand(context.Background(), []string{"--guest", "127.0.0.1:7000", "--resume", runs[0], "another task"},
		devNull(t), &out, &errOut); err == nil || !strings.Contains(err.Error(), "give no task") {
		t.Fatalf("resume with a task: %v", err)
	}
	out.Reset()
	if err := runCommand(context.Background(), []string{"--guest", "127.0.0.1:7000", "--resume", runs[0]},
		devNull(t), &out, &errOut); err != nil {
		t.Fatalf("resume: %v\n%s%s", err, out.String(), errOut.String())
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "step 4/5") || !strings.Contains(out.String(), "done") {
		t.Fatalf("resumed output:\n%s", out.String())
	}
	var kinds []string
	for _, a := range d.actions {
		kinds = append(kinds, string(a.Type))
	}
	if strings.Join(kinds, " ") != "click type" {
		t.Fatalf("actions %v, want each once", kinds)
	}
	events, err := os.ReadFile(filepath.Join(runs[0], "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	e := string(events)
	if strings.Count(e, `"kind":"start"`) != 1 || !strings.Contains(e, `"kind":"resume"`) || !strings.Contains(e, `"phase":"request","requests_left":3,"step":3`) ||
		!strings.Contains(e, `"ok":true`) {
		t.Fatalf("record:\n%s", e)
	}
	assertNoSecret(t, runs[0])
	if err := runCommand(context.Background(), []string{"--guest", "127.0.0.1:7000", "--resume", runs[0]},
		devNull(t), &out, &errOut); err == nil || !strings.Contains(err.Error(), "already finished") {
		t.Fatalf("resuming a finished run: %v", err)
	}
}

// A run stopped during an action (cancelled while typing): without a
// terminal the resume refuses unless --reconcile says what happened, and
// names the action and the last screenshot; bad values are refused; with
// --reconcile not-done the typing runs again and the record says so.
func TestRunResumeReconcile(t *testing.T) {
	_, d, dir := harness(t,
		respserver.Call(`{"type":"screenshot"}`),
		respserver.Call(`{"type":"type","text":"once"}`),
		respserver.Final("done"))
	var out, errOut bytes.Buffer
	if err := runCommand(context.Background(), []string{"--guest", "127.0.0.1:7000", "--reconcile", "done", "the task"},
		devNull(t), &out, &errOut); err == nil || !strings.Contains(err.Error(), "--reconcile is for --resume") {
		t.Fatalf("--reconcile without --resume: %v", err)
	}
	record := d.cancelledRun(t, dir, &out, &errOut)
	resume := func(more ...string) error {
		out.Reset()
		return runCommand(context.Background(), append([]string{"--guest", "127.0.0.1:7000", "--resume", record}, more...),
			devNull(t), &out, &errOut)
	}
	err := resume()
	for _, want := range []string{"type 4 chars", "--reconcile done", "no terminal", filepath.Join(record, "step-001.png")} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("resume without a terminal: %v, want %q named", err, want)
		}
	}
	if err := resume("--reconcile", "maybe"); err == nil || !strings.Contains(err.Error(), `--reconcile "maybe": use done`) {
		t.Fatalf("--reconcile maybe: %v", err)
	}
	if n := len(d.actions); n != 1 {
		t.Fatalf("%d actions before the resume, want the one typing", n)
	}
	if err := resume("--reconcile", "not-done"); err != nil {
		t.Fatalf("resume: %v\n%s%s", err, out.String(), errOut.String())
	}
	if len(d.actions) != 2 || d.actions[1].Text != "once" {
		t.Fatalf("actions %v, want the typing again", d.actions)
	}
	events, err := os.ReadFile(filepath.Join(record, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if e := string(events); !strings.Contains(e, `"phase":"before_call"`) || !strings.Contains(e, `"reconciliation":"not-done"`) || !strings.Contains(e, `"ok":true`) {
		t.Fatalf("record:\n%s", e)
	}
}

// A run started with --confirm resumes asking before each action (here with
// no terminal to ask on, so the resumed action is refused), unless the
// resume's own --confirm=false says otherwise.
func TestRunResumeKeepsConfirm(t *testing.T) {
	for _, flags := range [][]string{nil, {"--confirm=false"}} {
		failing := respserver.Call(`{"type":"type","text":"once"}`)
		failing.Fail500 = 3
		_, d, dir := harness(t,
			respserver.Call(`{"type":"screenshot"}`),
			respserver.Call(`{"type":"click","x":10,"y":10}`),
			failing,
			respserver.Final("done"))
		var out bytes.Buffer
		if err := runCommand(context.Background(), []string{"--guest", "127.0.0.1:7000", "--max-steps", "5", "--record-dir", dir, "the task"},
			devNull(t), &out, &out); err == nil {
			t.Fatalf("first run: want the 500\n%s", out.String())
		}
		runs, _ := filepath.Glob(filepath.Join(dir, "*"))
		events := filepath.Join(runs[0], "events.jsonl")
		data, err := os.ReadFile(events)
		if err != nil {
			t.Fatal(err)
		}
		// As if the run had been started with --confirm (asking needs a
		// terminal this test has not got).
		confirmed := strings.Replace(string(data), `"confirm":false`, `"confirm":true`, 1)
		if confirmed == string(data) {
			t.Fatalf("the start note does not say --confirm:\n%s", data)
		}
		if err := os.WriteFile(events, []byte(confirmed), 0o644); err != nil {
			t.Fatal(err)
		}
		d.actions = nil
		out.Reset()
		args := append([]string{"--guest", "127.0.0.1:7000", "--resume", runs[0]}, flags...)
		err = runCommand(context.Background(), args, devNull(t), &out, &out)
		want := 0
		if flags != nil {
			want = 1
			if err != nil {
				t.Fatalf("resume %v: %v\n%s", flags, err, out.String())
			}
		} else if err == nil || !strings.Contains(err.Error(), "before_action not approved") {
			t.Fatalf("resume of a --confirm run with no terminal: %v, want the action refused\n%s", err, out.String())
		}
		if len(d.actions) != want {
			t.Fatalf("resume %v ran %v, want %d actions\n%s", flags, d.actions, want, out.String())
		}
	}
}
