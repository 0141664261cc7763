package executor

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/agentd/input"
)

// FuzzExecute builds actions field by field, as a model might send them,
// and runs those Validate accepts on a input.Fake, failing one call or
// cancelling at one call when told to. Nothing panics; what Validate
// refuses does nothing; an accepted action encodes to JSON Decode takes
// back; a point off the screen does nothing but ask the screen size; and
// whatever happens, once the Executor has released what it holds, no key
// or button is left down. Seeds are in testdata/fuzz/FuzzExecute.
func FuzzExecute(f *testing.F) {
	f.Fuzz(func(t *testing.T, typ uint8, x, y int, button, keys string, path []byte, sx, sy int, text string, failAt, cancelAt uint8) {
		a := actions.Action{Type: actions.Types()[int(typ)%len(actions.Types())], X: x, Y: y, Button: actions.Button(button), ScrollX: sx, ScrollY: sy, Text: text}
		if keys != "" {
			a.Keys = strings.Split(keys, ",")
		}
		for len(path) >= 4 && len(a.Path) <= actions.MaxPathLen {
			a.Path = append(a.Path, actions.Point{X: int(int16(binary.LittleEndian.Uint16(path))), Y: int(int16(binary.LittleEndian.Uint16(path[2:])))})
			path = path[4:]
		}
		ex, in, _ := newTestExecutor(Options{Frames: &seqHasher{hashes: []uint64{1}}})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if failAt > 0 {
			in.FailAt(int(failAt%32), nil)
		}
		if cancelAt > 0 {
			in.OnCall(func(n int, _ input.Call) {
				if n == int(cancelAt%32) {
					cancel()
				}
			})
		}
		verr := a.Validate()
		_, err := ex.Do(ctx, a)
		if verr != nil {
			if err == nil || len(in.Calls()) != 0 {
				t.Fatalf("invalid %+v (%v): Do = %v after %v", a, verr, err, in.Strings())
			}
			return
		}
		enc, merr := json.Marshal(a)
		if merr != nil {
			t.Fatalf("marshal %+v: %v", a, merr)
		}
		if _, derr := actions.Decode(enc); derr != nil {
			t.Fatalf("valid %+v encodes as %s, which Decode refuses: %v", a, enc, derr)
		}
		offScreen := false
		for _, p := range a.Points() {
			offScreen = offScreen || p.X < 0 || p.Y < 0 || p.X >= 800 || p.Y >= 600
		}
		if offScreen && failAt == 0 && cancelAt == 0 {
			if err == nil {
				t.Fatalf("%+v off the screen succeeded", a)
			}
			for _, c := range in.Calls() {
				if c.Op != "ScreenSize" {
					t.Fatalf("%+v off the screen made input calls: %v", a, in.Strings())
				}
			}
		}
		if rerr := ex.ReleaseAll(); rerr != nil {
			t.Fatalf("ReleaseAll after %+v: %v", a, rerr)
		}
		if down := in.Down(); len(down) != 0 {
			t.Fatalf("%+v (err %v) left %v down after %v", a, err, down, in.Strings())
		}
	})
}
