//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/desktoptest"
	"github.com/agentd-dev/agentd/internal/poll"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/runner"
)

const mcpGuestToken = "mcp-test-token-0123456789abcdef"

// mcpRig is a real agentd on a private 1440×900 Xvfb, recorded, and the
// real agentctl binary serving it over MCP.
type mcpRig struct {
	t        *testing.T
	agentctl string
	addr     string
	rec      *xrecorder.Recorder
	runs     string
}

// look has session cs take its first screenshot, which sets its view, and
// empties the recorder after it: what it records next is the test's.
func (r *mcpRig) look(ctx context.Context, cs *mcp.ClientSession) {
	r.t.Helper()
	screenshotOf(r.t, call(r.t, ctx, cs, `[{"type":"screenshot"}]`), 1280, 800)
	r.rec.Sync(r.t)
	r.rec.Clear()
}

// refused checks that session cs's call of actions is refused, saying
// why, and that nothing of it reached the desktop.
func (r *mcpRig) refused(ctx context.Context, cs *mcp.ClientSession, actions, why string) {
	r.t.Helper()
	res := call(r.t, ctx, cs, actions)
	if !res.IsError || !strings.Contains(resultText(res), why) {
		r.t.Fatalf("%s: error %v %q, want one saying %q", actions, res.IsError, resultText(res), why)
	}
	r.rec.Sync(r.t)
	if evs := r.rec.Events(); len(evs) != 0 {
		r.t.Fatalf("the refused call %s reached the desktop: %v", actions, evs)
	}
}

func newMCPRig(t *testing.T, agentdArgs ...string) *mcpRig {
	ready := 20 * time.Second
	if slices.Contains(agentdArgs, "--browser") {
		prereq.Programs(t, prereq.X, "chromium")
		if os.Geteuid() == 0 {
			// Chromium refuses root with its sandbox on.
			agentdArgs = append(agentdArgs, "--browser-user", "nobody")
		}
		ready = time.Minute
	}
	prereq.Programs(t, prereq.X, "Xvfb")
	d := desktoptest.Start(t, agentdtest.Binary(t), 1440, 900, mcpGuestToken, ready, agentdArgs...)
	return &mcpRig{t: t, agentctl: agentctlBinary(t), addr: d.Addr, rec: d.Rec, runs: t.TempDir()}
}

// command is agentctl mcp on the rig's guest.
func (r *mcpRig) command(args ...string) *exec.Cmd {
	cmd := exec.Command(r.agentctl, append([]string{"mcp", "--guest", r.addr, "--record-dir", r.runs}, args...)...)
	cmd.Env = append(os.Environ(), "AGENTD_TOKEN="+mcpGuestToken)
	return cmd
}

// connect starts agentctl mcp as the client's subprocess over stdio.
func (r *mcpRig) connect(opts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	cs, _ := r.connectLogged(opts, args...)
	return cs
}

// connectLogged is connect, with what agentctl mcp writes on standard
// error.
func (r *mcpRig) connectLogged(opts *mcp.ClientOptions, args ...string) (*mcp.ClientSession, *agentdtest.SyncBuffer) {
	t := r.t
	t.Helper()
	cmd := r.command(args...)
	stderr := &agentdtest.SyncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "agentd-test", Version: "v0"}, opts)
	cs, err := client.Connect(mcpCtx(t), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("agentctl mcp:\n%s", stderr.String())
		}
	})
	return cs, stderr
}

func mcpCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// call calls the computer tool with the actions in JSON.
func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, actionsJSON string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "computer", Arguments: json.RawMessage(`{"actions":` + actionsJSON + `}`)})
	if err != nil {
		t.Fatalf("call %s: %v", actionsJSON, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// screenshotOf decodes the result's image and checks it is a PNG of w×h.
func screenshotOf(t *testing.T, res *mcp.CallToolResult, w, h int) {
	t.Helper()
	if res.IsError {
		t.Fatalf("error result: %s", resultText(res))
	}
	for _, c := range res.Content {
		if im, ok := c.(*mcp.ImageContent); ok {
			if im.MIMEType != "image/png" {
				t.Fatalf("image of type %q", im.MIMEType)
			}
			img, err := png.Decode(bytes.NewReader(im.Data))
			if err != nil {
				t.Fatalf("the screenshot is not a PNG: %v", err)
			}
			if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
				t.Fatalf("screenshot %dx%d, want %dx%d", b.Dx(), b.Dy(), w, h)
			}
			return
		}
	}
	t.Fatalf("no image in the result: %s", resultText(res))
}

func presses(evs []xrecorder.Event) []xrecorder.Event {
	var out []xrecorder.Event
	for _, e := range evs {
		if e.Kind == xrecorder.ButtonPress {
			out = append(out, e)
		}
	}
	return out
}

// TestMCPStdioComputer drives the desktop through the real agentctl mcp
// over stdio with the SDK's own client: the tool's schema, a click in the
// fitted view landing once at the mapped screen point, the screenshot's
// size, Unicode typing, a bad call performing nothing, and the session's
// run record (typed text by its length only).
func TestMCPStdioComputer(t *testing.T) {
	r := newMCPRig(t)
	cs := r.connect(nil)
	ctx := mcpCtx(t)

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "computer" {
		t.Fatalf("tools %+v, want computer alone", tools.Tools)
	}
	schema, _ := json.Marshal(tools.Tools[0].InputSchema)
	for _, want := range []string{`"actions"`, `"double_click"`, `"scroll_y"`, `"path"`, `"additionalProperties":false`} {
		if !strings.Contains(string(schema), want) {
			t.Fatalf("input schema lacks %s: %s", want, schema)
		}
	}

	r.look(ctx, cs)
	res := call(t, ctx, cs, `[{"type":"click","button":"left","x":640,"y":400}]`)
	screenshotOf(t, res, 1280, 800)
	if !strings.Contains(resultText(res), "click left (640,400)") {
		t.Fatalf("the text does not say what ran: %q", resultText(res))
	}
	r.rec.Sync(t)
	if ps := presses(r.rec.Events()); len(ps) != 1 || ps[0].X != 720 || ps[0].Y != 450 || ps[0].Button != 1 {
		t.Fatalf("presses %v, want one left press at (720,450)", ps)
	}

	const text = "Héllo wörld ✓ 你好"
	screenshotOf(t, call(t, ctx, cs, `[{"type":"type","text":"`+text+`"}]`), 1280, 800)
	r.rec.WaitTyped(t, text, 10*time.Second)

	// Each bad call names why and performs nothing, not even its valid
	// first action.
	r.rec.Sync(t)
	r.rec.Clear()
	for _, bad := range []struct{ actions, why string }{
		{`[{"type":"click","x":10,"y":10},{"type":"keypress","keys":["nosuchkey"]}]`, "nosuchkey"},
		{`[{"type":"move","x":5,"y":5},{"type":"click","x":1280,"y":10}]`, "outside the 1280x800 image"},
		{`[{"type":"click","x":5,"y":5},{"type":"drag","path":[{"x":1,"y":1}]}]`, "at least 2 points"},
		{`[{"type":"type","text":"a","x":3}]`, `unexpected field "x"`},
	} {
		res := call(t, ctx, cs, bad.actions)
		if !res.IsError || !strings.Contains(resultText(res), "nothing was performed") || !strings.Contains(resultText(res), bad.why) {
			t.Fatalf("bad call %s: error %v, %q; want an error saying %q and that nothing was performed", bad.actions, res.IsError, resultText(res), bad.why)
		}
	}
	r.rec.Sync(t)
	if evs := r.rec.Events(); len(evs) != 0 {
		t.Fatalf("bad calls reached the desktop: %v", evs)
	}

	cs.Close()
	recs, _ := filepath.Glob(filepath.Join(r.runs, "*", "events.jsonl"))
	if len(recs) != 1 {
		t.Fatalf("records %v, want one for the session", recs)
	}
	deadline := time.Now().Add(20 * time.Second)
	var data []byte
	for {
		data, _ = os.ReadFile(recs[0])
		if bytes.Contains(data, []byte(`"kind":"end"`)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []string{`"kind":"start"`, `"mode":"mcp"`, `click left (640,400)`, `type 16 chars`, `"kind":"end"`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Fatalf("the record lacks %s:\n%s", want, data)
		}
	}
	if bytes.Contains(data, []byte("wörld")) {
		t.Fatal("the record holds the typed text")
	}
}

// TestMCPKilledKeepsItsRecord: agentctl mcp killed (SIGKILL) in the middle
// of a call, once the call's spare screenshot file is made
// (Record.PrepareShot), leaves a record the console's reader reads: every
// call answered is in it, in order, each with its screenshot file, and
// nothing else is in the folder but that empty hidden spare and the lines
// of the call in progress (README: what a crash loses).
func TestMCPKilledKeepsItsRecord(t *testing.T) {
	r := newMCPRig(t)
	ctx := mcpCtx(t)
	cmd := r.command()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agentd-test", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	moves := []string{`[{"type":"move","x":100,"y":100}]`, `[{"type":"move","x":400,"y":300}]`, `[{"type":"move","x":640,"y":400}]`, `[{"type":"move","x":10,"y":700}]`}
	for _, m := range moves {
		screenshotOf(t, call(t, ctx, cs, m), 1280, 800)
	}
	dirs, _ := filepath.Glob(filepath.Join(r.runs, "*"))
	if len(dirs) != 1 {
		t.Fatalf("records %v, want one for the session", dirs)
	}
	// A long typing call, killed once its spare file is there.
	typing := make(chan struct{})
	go func() {
		defer close(typing)
		_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "computer", Arguments: json.RawMessage(`{"actions":[{"type":"type","text":"` + strings.Repeat("a", 5000) + `"}]}`)})
	}()
	poll.For(t, 20*time.Second, "the typing call's spare screenshot file", func() ([]string, bool) {
		spares, _ := filepath.Glob(filepath.Join(dirs[0], ".shot-*"))
		return spares, len(spares) == 1
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-typing
	f, err := os.Open(filepath.Join(dirs[0], "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	shots := map[string]bool{}
	var steps []int
	err = runner.ReadRecord(f, func(l *runner.RecordLine) error {
		if l.Kind == runner.EventRequest {
			steps = append(steps, l.Step)
		}
		if l.Kind == runner.EventScreenshot {
			shots[l.Screenshot.File] = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the record after the kill does not read: %v", err)
	}
	if len(steps) < len(moves) || !slices.IsSorted(steps) {
		t.Fatalf("calls in the record: steps %v, want the %d answered in order", steps, len(moves))
	}
	if len(shots) != len(moves) {
		t.Fatalf("screenshot lines %v, want one per answered call (%d)", shots, len(moves))
	}
	entries, err := os.ReadDir(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	spares := 0
	for _, e := range entries {
		name := e.Name()
		fi, _ := e.Info()
		switch {
		case name == "events.jsonl" || shots[name]:
			if strings.HasSuffix(name, ".png") && fi.Size() == 0 {
				t.Errorf("%s is empty", name)
			}
		case strings.HasPrefix(name, ".shot-") && fi.Size() == 0:
			spares++
		default:
			t.Errorf("the record holds %s (%d bytes)", name, fi.Size())
		}
	}
	if spares != 1 {
		t.Fatalf("%d spares, want the typing call's one", spares)
	}
}

// TestMCPSecondSessionBusy: a second MCP session on a guest that one
// already drives gets a clear busy error and performs nothing.
func TestMCPSecondSessionBusy(t *testing.T) {
	r := newMCPRig(t)
	first := r.connect(nil)
	ctx := mcpCtx(t)
	r.look(ctx, first)
	second := r.connect(nil)
	r.refused(ctx, second, `[{"type":"click","x":100,"y":100}]`, "busy")
	// The first session still drives it.
	screenshotOf(t, call(t, ctx, first, `[{"type":"click","x":100,"y":100}]`), 1280, 800)
}

// TestMCPCancelMidDrag: notifications/cancelled (the SDK client's context
// ending) stops a long drag in the middle; the button is released.
func TestMCPCancelMidDrag(t *testing.T) {
	r := newMCPRig(t)
	cs := r.connect(nil)
	ctx := mcpCtx(t)
	r.look(ctx, cs)
	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "computer",
			Arguments: json.RawMessage(`{"actions":[{"type":"drag","keys":["shift"],"path":` + agentdtest.LongDragPath(1270, 790) + `}]}`)})
		done <- err
	}()
	r.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonPress && e.Button == 1 }, 20*time.Second)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	// The client's cancel does not wait for the server: the release comes
	// soon after, button first, then the held shift.
	r.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonRelease && e.Button == 1 }, 20*time.Second)
	r.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.KeyRelease }, 20*time.Second)
	r.rec.Sync(t)
	if keys, mask := r.rec.Down(t); len(keys) != 0 || mask&0xff != 0 || mask&xrecorder.Button1Mask != 0 {
		t.Fatalf("pressed after the cancel: keys %v mask %#x", keys, mask)
	}
	for _, e := range r.rec.Events() {
		if e.Kind == xrecorder.ButtonRelease && e.X >= 1420 && e.Y <= 12 {
			t.Fatalf("the drag ran to its end: %v", e)
		}
	}
	// The session goes on.
	screenshotOf(t, call(t, ctx, cs, `[{"type":"move","x":5,"y":5}]`), 1280, 800)
}

// TestMCPHTTPRefused: over Streamable HTTP, a request without the bearer
// token is refused (401), one from a foreign Origin too (403), and the
// SDK's client with the token drives the desktop.
func TestMCPHTTPRefused(t *testing.T) {
	r := newMCPRig(t)
	const token = "mcp-http-token-for-the-test"
	cmd := r.command("--http", "127.0.0.1:0")
	cmd.Env = append(cmd.Env, mcpTokenEnv+"="+token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	var endpoint string
	for sc.Scan() {
		if m := regexp.MustCompile(`serving (http://\S+/mcp)`).FindStringSubmatch(sc.Text()); m != nil {
			endpoint = m[1]
			break
		}
	}
	if endpoint == "" {
		t.Fatal("agentctl mcp --http printed no endpoint")
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	if strings.Contains(endpoint, token) {
		t.Fatal("the token is in the printed endpoint")
	}

	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	post := func(hdr map[string]string) int {
		req, _ := http.NewRequest("POST", endpoint, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), token) {
			t.Fatal("the token was echoed")
		}
		return resp.StatusCode
	}
	for _, c := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer " + token + "x"}, http.StatusUnauthorized},
		{"foreign Origin", map[string]string{"Authorization": "Bearer " + token, "Origin": "http://evil.example"}, http.StatusForbidden},
		{"foreign Origin, no token", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
	} {
		if got := post(c.hdr); got != c.want {
			t.Fatalf("%s: HTTP %d, want %d", c.name, got, c.want)
		}
	}

	hc := &http.Client{Transport: bearer{token: token, rt: http.DefaultTransport}}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentd-test", Version: "v0"}, nil)
	ctx := mcpCtx(t)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r.look(ctx, cs)
	screenshotOf(t, call(t, ctx, cs, `[{"type":"click","x":640,"y":400}]`), 1280, 800)
	r.rec.Sync(t)
	if ps := presses(r.rec.Events()); len(ps) != 1 || ps[0].X != 720 || ps[0].Y != 450 {
		t.Fatalf("presses %v, want one at (720,450)", ps)
	}
}

// bearer adds the token to every request.
type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

// TestMCPTakeover: a person takes the desktop over (agentd's operator
// role, as the console does): a call returns "held by a person" and
// nothing of it reaches the desktop, then or later; the call after the
// hand back runs nothing and answers with the person's note and a fresh
// screenshot; the next one runs. A take over between two calls is told
// the same way. The record has the take over.
func TestMCPTakeover(t *testing.T) {
	r := newMCPRig(t)
	cs := r.connect(nil)
	ctx := mcpCtx(t)
	screenshotOf(t, call(t, ctx, cs, `[{"type":"screenshot"}]`), 1280, 800)
	op, err := guest.Operate(ctx, r.addr, mcpGuestToken)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if err := op.Take(ctx, "tester"); err != nil {
		t.Fatal(err)
	}
	r.rec.Sync(t)
	r.rec.Clear()
	res := call(t, ctx, cs, `[{"type":"click","x":640,"y":400}]`)
	if !res.IsError || !strings.Contains(resultText(res), "held by a person") {
		t.Fatalf("call during the take over: error %v %q, want held by a person", res.IsError, resultText(res))
	}
	if _, err := op.Input(ctx, actions.Action{Type: actions.TypeText, Text: "ok"}); err != nil {
		t.Fatal(err)
	}
	r.rec.WaitTyped(t, "ok", 10*time.Second)
	if err := op.HandBack(ctx, "I closed the dialog"); err != nil {
		t.Fatal(err)
	}
	res = call(t, ctx, cs, `[{"type":"click","x":100,"y":100}]`)
	screenshotOf(t, res, 1280, 800)
	if txt := resultText(res); !strings.Contains(txt, "handed it back") || !strings.Contains(txt, "I closed the dialog") ||
		!strings.Contains(txt, "Nothing of this call ran") || !strings.Contains(txt, "1 action(s)") {
		t.Fatalf("the call after the hand back: %q", txt)
	}
	r.rec.Sync(t)
	if ps := presses(r.rec.Events()); len(ps) != 0 {
		t.Fatalf("the model's clicks reached the desktop around the take over: %v", ps)
	}

	screenshotOf(t, call(t, ctx, cs, `[{"type":"click","x":640,"y":400}]`), 1280, 800)
	r.rec.Sync(t)
	if ps := presses(r.rec.Events()); len(ps) != 1 || ps[0].X != 720 || ps[0].Y != 450 {
		t.Fatalf("presses %v, want the one after the hand back at (720,450)", ps)
	}

	// Taken and handed back between two calls.
	if err := op.Take(ctx, "tester"); err != nil {
		t.Fatal(err)
	}
	if err := op.HandBack(ctx, "second look"); err != nil {
		t.Fatal(err)
	}
	r.rec.Clear()
	res = call(t, ctx, cs, `[{"type":"click","x":640,"y":400}]`)
	if txt := resultText(res); res.IsError || !strings.Contains(txt, "second look") {
		t.Fatalf("the call after a take over between calls: error %v %q", res.IsError, txt)
	}
	r.rec.Sync(t)
	if ps := presses(r.rec.Events()); len(ps) != 0 {
		t.Fatalf("a call chosen before the take over ran: %v", ps)
	}

	cs.Close()
	recs, _ := filepath.Glob(filepath.Join(r.runs, "*", "events.jsonl"))
	if len(recs) != 1 {
		t.Fatalf("records %v", recs)
	}
	data, _ := os.ReadFile(recs[0])
	for _, want := range []string{`"phase":"paused"`, `"phase":"handed_back"`, `I closed the dialog`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Fatalf("the record lacks %s:\n%s", want, data)
		}
	}
}

// TestMCPConfirm: with --confirm each call is asked, with its steps, through
// MCP elicitation (a multi round-trip request) before any of it runs:
// approved, the click lands; declined, nothing reaches the desktop. A client that cannot be asked, with no console or terminal,
// gets every action refused (fail closed).
func TestMCPConfirm(t *testing.T) {
	r := newMCPRig(t)
	ctx := mcpCtx(t)
	var mu sync.Mutex
	approve, asked := true, 0
	var msgs []string
	cs := r.connect(&mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		asked++
		msgs = append(msgs, req.Params.Message)
		if approve {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}, "--confirm")
	r.look(ctx, cs)
	screenshotOf(t, call(t, ctx, cs, `[{"type":"click","x":640,"y":400}]`), 1280, 800)
	r.rec.Sync(t)
	if ps := presses(r.rec.Events()); len(ps) != 1 || ps[0].X != 720 || ps[0].Y != 450 {
		t.Fatalf("approved: presses %v, want one at (720,450)", ps)
	}
	mu.Lock()
	if asked != 2 || !strings.Contains(msgs[1], "1. click left (640,400)\n2. a screenshot") {
		t.Fatalf("asked %d times %q, want once per call, naming its steps", asked, msgs)
	}
	approve = false
	mu.Unlock()
	r.rec.Clear()
	r.refused(ctx, cs, `[{"type":"click","x":640,"y":400}]`, "not approved")
	cs.Close()

	// Nobody to ask.
	mute := r.connect(nil, "--confirm")
	r.rec.Clear()
	r.refused(ctx, mute, `[{"type":"click","x":640,"y":400}]`, "nobody can be asked")
}

// TestMCPExecAndProgress: exec_py keeps its namespace for the MCP session
// and a long call sends progress notifications; a computer call sends one
// per completed action.
func TestMCPExecAndProgress(t *testing.T) {
	r := newMCPRig(t, "--code")
	ctx := mcpCtx(t)
	var mu sync.Mutex
	var notes []*mcp.ProgressNotificationParams
	cs := r.connect(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		notes = append(notes, req.Params)
	}}, "--tools", "computer,code")
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 2 {
		t.Fatalf("tools %v %v, want computer and exec_py", tools, err)
	}
	exec := func(code string, token any) *mcp.CallToolResult {
		p := &mcp.CallToolParams{Name: "exec_py", Arguments: map[string]any{"code": code}}
		if token != nil {
			p.SetProgressToken(token)
		}
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			t.Fatalf("exec_py %q: %s", code, resultText(res))
		}
		return res
	}
	exec("x = 41", nil)
	res := exec("time.sleep(2.5)\nlog(x + 1)", "long")
	if !strings.Contains(resultText(res), "42") {
		t.Fatalf("the namespace was not kept: %q", resultText(res))
	}
	count := func(token any) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, p := range notes {
			if p.ProgressToken == token {
				n++
			}
		}
		return n
	}
	// Notifications may arrive just after the result.
	deadline := time.Now().Add(10 * time.Second)
	for count("long") < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := count("long"); n < 2 {
		t.Fatalf("%d progress notifications for a 2.5 s exec_py, want at least 2", n)
	}
	p := &mcp.CallToolParams{Name: "computer", Arguments: json.RawMessage(`{"actions":[{"type":"move","x":1,"y":1},{"type":"wait"},{"type":"move","x":2,"y":2}]}`)}
	p.SetProgressToken("acts")
	if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
		t.Fatalf("computer: %v %v", err, res)
	}
	deadline = time.Now().Add(10 * time.Second)
	for count("acts") < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := count("acts"); n < 3 {
		t.Fatalf("%d progress notifications for 3 actions, want 3", n)
	}
}
