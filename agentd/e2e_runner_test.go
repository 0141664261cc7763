//go:build linux && cgo

package agentd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/scaling"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// TestE2ERunnerDrivesRealDesktop is the whole chain: a scripted model
// through the real SDK → runner → guest client → agentd → robotgo on Xvfb →
// an X client recording what it receives. The model works in a scaled view.
func TestE2ERunnerDrivesRealDesktop(t *testing.T) {
	d := newDesktop(t)
	d.client.SetView(wire.View{Width: 1280, Height: 800, Fit: true})
	img := scaling.Size{W: 1280, H: 800}
	model, base := respserver.Start(
		respserver.Call(`{"type":"screenshot"}`),
		func() respserver.Turn {
			turn := respserver.Call(
				`{"type":"click","button":"left","x":640,"y":400,"keys":["shift"]}`,
				`{"type":"type","text":"Zoë ✓"}`,
				`{"type":"keypress","keys":["ctrl","a"]}`,
			)
			turn.SafetyChecks = []respserver.SafetyCheck{{ID: "sc_1", Code: "test", Message: "check"}}
			turn.ExpectImage = img
			return turn
		}(),
		respserver.Turn{Message: "done", ExpectImage: img},
	)
	defer model.Close()
	api := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("test"))
	ts := runner.New(api, d.client)
	defer ts.Close()

	// The run record must not hold the agentd token the client was given.
	recDir := filepath.Join(t.TempDir(), "run")
	rec, err := runner.CreateRecord(recDir)
	if err != nil {
		t.Fatal(err)
	}
	var before []string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := ts.Run(ctx, runner.RunOptions{
		Model: "test", Input: "do it",
		OnDiagnostic: rec.Diagnostic,
		OnEvent:      rec.Event,
	}, runner.CallOptions{
		ApproveSafetyChecks: func(context.Context, runner.CallInfo, []runner.SafetyCheck) (any, error) { return true, nil },
		BeforeAction: func(_ context.Context, a runner.ActionInfo) (any, error) {
			before = append(before, fmt.Sprintf("%s#%d", a.Action.Type, a.Index))
			return true, nil
		},
	})
	if ferr := rec.Finish(res, err); ferr != nil {
		t.Fatal(ferr)
	}
	if err != nil {
		t.Fatal(err)
	}
	files, err := os.ReadDir(recDir)
	if err != nil || len(files) < 2 {
		t.Fatalf("run record %v: %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(recDir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte(testToken)) {
			t.Fatalf("the run record's %s holds the agentd token", f.Name())
		}
	}
	if err := model.Err(); err != nil {
		t.Fatalf("the model server saw a bad request: %v", err)
	}
	if res.FinalMessage != "done" || res.Steps != 3 {
		t.Fatalf("result %+v", res)
	}
	want := []string{"screenshot#0", "click#0", "type#1", "keypress#2", "screenshot#3"}
	if fmt.Sprint(before) != fmt.Sprint(want) {
		t.Fatalf("before_action saw %v, want %v", before, want)
	}
	evs := d.rec.WaitUntil(t, func(evs []xrecorder.Event) bool {
		for _, e := range evs {
			if e.Kind == xrecorder.KeyRelease && e.State&xrecorder.ControlMask != 0 {
				return true
			}
		}
		return false
	}, 10*time.Second)
	var press *xrecorder.Event
	for i := range evs {
		if evs[i].Kind == xrecorder.ButtonPress {
			press = &evs[i]
			break
		}
	}
	// Image (640,400) of a 1440×900 screen fitted into 1280×800 is screen (720,450).
	if press == nil || !near(press.X, 720) || !near(press.Y, 450) || press.State&xrecorder.ShiftMask == 0 {
		t.Fatalf("click arrived as %v", press)
	}
	if got := xrecorder.Typed(evs); got != "Zoë ✓" {
		t.Fatalf("typed %q", got)
	}
	if keys, mask := d.rec.Down(t); len(keys) != 0 || mask&0xff != 0 {
		t.Fatalf("left pressed: %v %#x", keys, mask)
	}
}
