package runner

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/scaling"
	"github.com/agentd-dev/agentd/tools/respserver"
)

const testKey = "sk-test-DO-NOT-LOG-4242"

// driverCall is one call the fake driver received.
type driverCall struct {
	Kind   string // "do" or "screenshot"
	Action actions.Action
	Start  time.Time
	End    time.Time
	Err    error
}

// fakeDriver records every call with timestamps. Type actions can block
// until gate is closed or the context ends.
type fakeDriver struct {
	size scaling.Size
	png  []byte
	// gate, if set, holds type actions until it is closed or ctx is done.
	gate chan struct{}
	// started receives once per blocking action when it starts.
	started chan struct{}

	mu    sync.Mutex
	calls []driverCall
}

func newFakeDriver(t *testing.T, w, h int) *fakeDriver {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return &fakeDriver{size: scaling.Size{W: w, H: h}, png: buf.Bytes(), started: make(chan struct{}, 16)}
}

func (f *fakeDriver) record(c driverCall) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
}

func (f *fakeDriver) Do(ctx context.Context, a actions.Action) (computer.ActionResult, error) {
	start := time.Now()
	if a.Type == actions.TypeText && f.gate != nil {
		f.started <- struct{}{}
		select {
		case <-f.gate:
		case <-ctx.Done():
			f.record(driverCall{Kind: "do", Action: a, Start: start, End: time.Now(), Err: ctx.Err()})
			return computer.ActionResult{Type: string(a.Type), Error: "cancelled"}, ctx.Err()
		}
	}
	f.record(driverCall{Kind: "do", Action: a, Start: start, End: time.Now()})
	return computer.ActionResult{Type: string(a.Type), OK: true, DurationUS: 7}, nil
}

func (f *fakeDriver) Screenshot(ctx context.Context) (computer.Screenshot, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return computer.Screenshot{}, err
	}
	f.record(driverCall{Kind: "screenshot", Start: start, End: time.Now()})
	return computer.Screenshot{PNG: f.png, Transform: scaling.Transform{
		Screen: f.size, Crop: scaling.Rect{W: f.size.W, H: f.size.H}, Image: f.size,
	}}, nil
}

func (f *fakeDriver) Calls() []driverCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]driverCall(nil), f.calls...)
}

// kinds summarises the calls: "screenshot" or the action type.
func (f *fakeDriver) kinds() []string {
	var out []string
	for _, c := range f.Calls() {
		if c.Kind == "screenshot" {
			out = append(out, "screenshot")
		} else {
			out = append(out, string(c.Action.Type))
		}
	}
	return out
}

// setup starts a scripted server and a toolset whose real SDK client talks
// to it, over a 64x40 fake desktop.
func setup(t *testing.T, turns ...respserver.Turn) (*Toolset, *respserver.Server, *fakeDriver) {
	t.Helper()
	return setupWith(t, nil, turns...)
}

// setupWith is setup with more client options (they come last and win).
func setupWith(t *testing.T, more []option.RequestOption, turns ...respserver.Turn) (*Toolset, *respserver.Server, *fakeDriver) {
	t.Helper()
	srv, url := respserver.Start(turns...)
	t.Cleanup(srv.Close)
	d := newFakeDriver(t, 64, 40)
	opts := append([]option.RequestOption{option.WithBaseURL(url), option.WithAPIKey(testKey), option.WithMaxRetries(2)}, more...)
	return New(openai.NewClient(opts...), computer.Sequential(d)), srv, d
}

func noViolations(t *testing.T, srv *respserver.Server) {
	t.Helper()
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

const shot = `{"type":"screenshot"}`

func opts() RunOptions {
	return RunOptions{Model: "gpt-5.4", Input: "do the task"}
}

// historyMode is how a run keeps its history: stored by the API, each
// request naming the response before, or kept by the runner, which sends
// it again with store false.
type historyMode struct {
	name      string
	stateless bool
}

var historyModes = []historyMode{{"stored", false}, {"local history", true}}

// opts are opts() in this mode.
func (m historyMode) opts() RunOptions {
	o := opts()
	if m.stateless {
		o.Store = openai.Bool(false)
	}
	return o
}
