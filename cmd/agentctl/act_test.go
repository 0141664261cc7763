//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/internal/xrecorder"
)

// TestActArrayIsOneCall: agentctl act with an array whose second action is
// off the screen runs nothing, with or without --screenshot-out, and names
// the bad action by its index in the array. A good array then runs whole, so
// the recorder is shown to see what act does.
func TestActArrayIsOneCall(t *testing.T) {
	r := newCrashRig(t)
	act := func(args ...string) (actOutput, error, string) {
		t.Helper()
		cmd := exec.Command(r.agentctl, append([]string{"act", "--guest", r.addr}, args...)...)
		cmd.Env = append(os.Environ(), "AGENTD_TOKEN="+crashToken)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		var out actOutput
		if jerr := json.Unmarshal(stdout, &out); jerr != nil {
			t.Fatalf("agentctl act %v printed %q (%v), stderr %s", args, stdout, jerr, stderr.String())
		}
		return out, err, stderr.String()
	}
	const bad = `[{"type":"move","x":100,"y":100},{"type":"click","x":5000,"y":5000}]`
	shot := filepath.Join(t.TempDir(), "shot.png")
	for _, form := range [][]string{{bad}, {"--screenshot-out", shot, bad}} {
		r.rec.Clear()
		out, err, stderr := act(form...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("agentctl act %v: %v, want it to fail", form, err)
		}
		if out.Error == nil || out.Error.FailedIndex != 1 || !strings.Contains(out.Error.Message, "action 1") || len(out.Results) != 0 {
			t.Fatalf("agentctl act %v printed %+v (error %+v), want no results and action 1 refused\n%s", form, out, out.Error, stderr)
		}
		r.rec.Sync(t)
		if evs := r.rec.Events(); len(evs) != 0 {
			t.Fatalf("agentctl act %v refused the array but the desktop got %v", form, evs)
		}
	}

	r.rec.Clear()
	out, err, stderr := act(`[{"type":"move","x":100,"y":100},{"type":"click","x":200,"y":150}]`)
	if err != nil || out.Error != nil || len(out.Results) != 2 || out.Results[1].Index != 1 {
		t.Fatalf("a good array: %v, printed %+v\n%s", err, out, stderr)
	}
	r.rec.Sync(t)
	var press *xrecorder.Event
	for _, e := range r.rec.Events() {
		if e.Kind == xrecorder.ButtonPress {
			press = &e
			break
		}
	}
	if press == nil || press.X != 200 || press.Y != 150 {
		t.Fatalf("a good array: the desktop got %v, want a click at 200,150", r.rec.Events())
	}
}
