package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/scaling"
	"github.com/agentd-dev/agentd/tools/respserver"
)

const secretKey = "sk-proj-SECRET-never-in-records"

// desktop is a fake guest: it records actions; type actions block until the
// context ends when block is set.
type desktop struct {
	png   []byte
	block chan struct{} // receives when a blocking type starts

	mu      sync.Mutex
	actions []actions.Action
	shots   int
	closed  bool
	view    wire.View
}

func (d *desktop) SetView(v wire.View) {
	d.mu.Lock()
	d.view = v
	d.mu.Unlock()
}

func newDesktop(t *testing.T) *desktop {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 80, 50))); err != nil {
		t.Fatal(err)
	}
	return &desktop{png: buf.Bytes()}
}

func (d *desktop) Do(ctx context.Context, a actions.Action) (wire.ActionResult, error) {
	d.mu.Lock()
	d.actions = append(d.actions, a)
	d.mu.Unlock()
	if a.Type == actions.TypeText && d.block != nil {
		d.block <- struct{}{}
		<-ctx.Done()
		return wire.ActionResult{Type: string(a.Type)}, ctx.Err()
	}
	return wire.ActionResult{Type: string(a.Type), OK: true}, nil
}

func (d *desktop) Run(ctx context.Context, as []actions.Action, h computer.Hooks) (computer.Screenshot, error) {
	return computer.Sequential(d).Run(ctx, as, h)
}

func (d *desktop) Screenshot(context.Context) (guest.Screenshot, error) {
	d.mu.Lock()
	d.shots++
	d.mu.Unlock()
	size := scaling.Size{W: 80, H: 50}
	return guest.Screenshot{PNG: d.png, Transform: scaling.Transform{Screen: size, Crop: scaling.Rect{W: 80, H: 50}, Image: size}}, nil
}

func (d *desktop) Close() error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	return nil
}

// harness points the command at a scripted server (through OPENAI_BASE_URL,
// as a user would) and a fake desktop.
func harness(t *testing.T, turns ...respserver.Turn) (*respserver.Server, *desktop, string) {
	srv, url := respserver.Start(turns...)
	t.Cleanup(srv.Close)
	t.Setenv("OPENAI_BASE_URL", url)
	t.Setenv("OPENAI_API_KEY", secretKey)
	t.Setenv("AGENTD_TOKEN", "guest-token")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	d := newDesktop(t)
	old := dialGuest
	dialGuest = func(_ context.Context, addr, token string, _ guest.DialOptions) (guestConn, error) {
		if addr != "127.0.0.1:7000" || token != "guest-token" {
			t.Errorf("dialed %s with %q", addr, token)
		}
		return d, nil
	}
	t.Cleanup(func() { dialGuest = old })
	return srv, d, t.TempDir()
}

// cancelledRun runs agentctl run on d, cancelled once d's typing starts, and
// returns the record the stopped run left in dir.
func (d *desktop) cancelledRun(t *testing.T, dir string, out, errOut io.Writer) string {
	t.Helper()
	d.block = make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-d.block; cancel() }()
	if err := runCommand(ctx, []string{"--guest", "127.0.0.1:7000", "--max-steps", "5", "--record-dir", dir, "the task"},
		devNull(t), out, errOut); err == nil {
		t.Fatal("the cancelled run succeeded")
	}
	d.block = nil
	runs, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(runs) != 1 {
		t.Fatalf("records %v", runs)
	}
	return runs[0]
}

func devNull(t *testing.T) *os.File {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestRunCommand(t *testing.T) {
	srv, d, dir := harness(t,
		respserver.Call(`{"type":"screenshot"}`),
		respserver.Call(`{"type":"click","x":10,"y":10}`, `{"type":"type","text":"private text"}`),
		respserver.Final("All \x1b[2Jdone."))
	var out, errOut bytes.Buffer
	err := runCommand(context.Background(), []string{"--guest", "127.0.0.1:7000", "--max-steps", "5", "--record-dir", dir, "open the editor"},
		devNull(t), &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	o := out.String()
	for _, want := range []string{"step 1/5", "step 3/5", "click left (10,10)", "type 12 chars", "screenshot 80x50", "All \uFFFD[2Jdone.", "run record: "} {
		if !strings.Contains(o, want) {
			t.Errorf("output lacks %q:\n%s", want, o)
		}
	}
	if strings.Contains(o, "private text") {
		t.Error("typed text was printed")
	}
	if !d.closed {
		t.Error("the guest connection was not closed")
	}
	if d.view != (wire.View{Width: 1280, Height: 800, Fit: true}) {
		t.Errorf("view %+v, want the default fit within 1280×800", d.view)
	}

	runs, _ := os.ReadDir(dir)
	if len(runs) != 1 {
		t.Fatalf("%d run records", len(runs))
	}
	rec := filepath.Join(dir, runs[0].Name())
	for _, f := range []string{"events.jsonl", "step-001.png", "step-002.png"} {
		if _, err := os.Stat(filepath.Join(rec, f)); err != nil {
			t.Error(err)
		}
	}
	kinds := map[string]int{}
	f, _ := os.Open(filepath.Join(rec, "events.jsonl"))
	defer f.Close()
	sc := bufio.NewScanner(f)
	var last map[string]any
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("bad line %s: %v", sc.Text(), err)
		}
		kinds[line["kind"].(string)]++
		last = line
	}
	for k, n := range map[string]int{"start": 1, "request": 3, "response": 3, "diagnostic": 3, "action": 2, "screenshot": 2, "final": 1, "end": 1} {
		if kinds[k] != n {
			t.Errorf("%d %q lines, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
	if last["kind"] != "end" || last["ok"] != true {
		t.Errorf("last line = %v", last)
	}
	assertNoSecret(t, rec)
}

func assertNoSecret(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, _ := os.ReadFile(path)
		if bytes.Contains(data, []byte(secretKey)) || bytes.Contains(data, []byte("guest-token")) {
			t.Errorf("%s holds a credential", path)
		}
		return nil
	})
}

func TestRunRefusesSafetyChecksWithoutTerminal(t *testing.T) {
	srv, d, dir := harness(t,
		respserver.Turn{Actions: respserver.Call(`{"type":"screenshot"}`).Actions, SafetyChecks: []respserver.SafetyCheck{{ID: "sc_1", Code: "malicious_instructions"}}},
		respserver.Final("done"))
	var out, errOut bytes.Buffer
	err := runCommand(context.Background(), []string{"--guest", "127.0.0.1:7000", "--record-dir", dir, "task"}, devNull(t), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "not a terminal") {
		t.Fatalf("err = %v", err)
	}
	if d.shots != 0 || len(d.actions) != 0 {
		t.Fatal("the guest was used without approval")
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestRunCtrlC(t *testing.T) {
	_, d, dir := harness(t,
		respserver.Call(`{"type":"screenshot"}`),
		respserver.Call(`{"type":"type","text":"a long text"}`, `{"type":"keypress","keys":["Return"]}`),
		respserver.Final("done"))
	d.block = make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-d.block; cancel() }()
	var out, errOut bytes.Buffer
	err := runCommand(ctx, []string{"--guest", "127.0.0.1:7000", "--record-dir", dir, "task"}, devNull(t), &out, &errOut)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "cancelled") || !strings.Contains(err.Error(), "attempted calls") {
		t.Fatalf("err = %v", err)
	}
	if len(d.actions) != 1 {
		t.Fatalf("actions = %v (the keypress must not run)", d.actions)
	}
	runs, _ := os.ReadDir(dir)
	data, _ := os.ReadFile(filepath.Join(dir, runs[0].Name(), "events.jsonl"))
	if !bytes.Contains(data, []byte(`"kind":"end"`)) || !bytes.Contains(data, []byte("context canceled")) {
		t.Fatalf("the record does not say how the run ended:\n%s", data)
	}
}

func TestRunNeedsKeyAndTask(t *testing.T) {
	_, _, dir := harness(t)
	var out bytes.Buffer
	if err := runCommand(context.Background(), []string{"--guest", "127.0.0.1:7000", "--record-dir", dir}, devNull(t), &out, &out); err == nil {
		t.Fatal("no task accepted")
	}
	t.Setenv("OPENAI_API_KEY", "")
	err := runCommand(context.Background(), []string{"--guest", "127.0.0.1:7000", "--record-dir", dir, "task"}, devNull(t), &out, &out)
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("err = %v", err)
	}
}
