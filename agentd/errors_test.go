package agentd

import (
	"context"
	"encoding/json"
	"errors"
	"image"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/agentd/executor"
)

// secret is the kind of detail a device or the capture reports: display
// names, error codes, paths. It belongs in the daemon's log only.
const secret = "X error 8 (BadMatch) on :77 via /tmp/.X11-unix/X77"

// leakyExec fails every action and every release with device detail.
type leakyExec struct{}

func (leakyExec) Do(_ context.Context, a actions.Action) (executor.Result, error) {
	return executor.Result{}, &executor.Error{Action: a.Type, Err: &executor.DeviceError{What: "press key Shift_L", Err: errors.New(secret)}}
}

func (leakyExec) ReleaseAll() error {
	return errors.Join(&executor.DeviceError{What: "release key Shift_L", Err: errors.New(secret)})
}

// leakyScreen captures nothing, with detail; its other methods are fakeScreen's.
type leakyScreen struct{ *fakeScreen }

func (leakyScreen) Capture(context.Context) (*image.RGBA, error) {
	return nil, errors.New("capture: " + secret)
}

// TestInternalDetailNeverCrossesTheWire: what failed is said to the client
// (which action, what was being done), what the device or the capture said
// only to the daemon's log. Every frame the client receives is checked.
func TestInternalDetailNeverCrossesTheWire(t *testing.T) {
	logs := &logBuf{t: t}
	f := newFixture(t, func(c *Config) {
		c.Exec = leakyExec{}
		c.Screen = leakyScreen{newFakeScreen()}
		c.Logf = logs.logf
	})
	conn := rawConn(t, f)
	requests := map[uint64]struct{ req, want string }{
		1: {`{"id":1,"op":"batch","actions":[{"type":"keypress","keys":["shift"]}]}`, "action 0 (keypress): keypress: press key Shift_L failed"},
		2: {`{"id":2,"op":"action","action":{"type":"click","x":1,"y":1}}`, "action 0 (click): click: press key Shift_L failed"},
		3: {`{"id":3,"op":"release_all"}`, "release all: release key Shift_L failed"},
		4: {`{"id":4,"op":"screenshot"}`, "screenshot failed"},
	}
	for id := uint64(1); id <= 4; id++ {
		if err := conn.Write(ctx5(t), websocket.MessageText, []byte(requests[id].req)); err != nil {
			t.Fatal(err)
		}
		for {
			_, data, err := conn.Read(ctx5(t))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), ":77") || strings.Contains(string(data), "BadMatch") || strings.Contains(string(data), "X11-unix") {
				t.Fatalf("request %d: detail crossed the wire: %s", id, data)
			}
			rep, prog, err := parseFrame(data)
			if err != nil {
				t.Fatal(err)
			}
			if prog != nil {
				if prog.Result.OK || prog.Result.Error == "" {
					t.Fatalf("progress %+v: the failure must say what failed", prog.Result)
				}
				continue
			}
			if rep.ID != id || rep.Error == nil || !strings.Contains(rep.Error.Message, requests[id].want) {
				t.Fatalf("request %d: reply %s, want an error saying %q", id, data, requests[id].want)
			}
			break
		}
	}
	if n := strings.Count(logs.text(), secret); n < 4 {
		t.Fatalf("the log has the detail %d times, want it for each of the 4 failures:\n%s", n, logs.text())
	}
}

// parseFrame reads one server message: a reply or a progress.
func parseFrame(data []byte) (wire.Reply, *wire.Progress, error) {
	var head struct {
		Op string `json:"op"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return wire.Reply{}, nil, err
	}
	if head.Op == wire.OpProgress {
		var p wire.Progress
		return wire.Reply{}, &p, json.Unmarshal(data, &p)
	}
	var r wire.Reply
	return r, nil, json.Unmarshal(data, &r)
}
