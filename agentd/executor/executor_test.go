package executor

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/agentd/input"
)

// fakeClock advances only when slept on, so waits run instantly.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

// seqHasher returns hashes[i] on the i-th call, then the last one forever.
type seqHasher struct {
	hashes []uint64
	calls  int
	err    error
}

func (h *seqHasher) FrameHash(ctx context.Context) (uint64, error) {
	if h.err != nil {
		return 0, h.err
	}
	i := min(h.calls, len(h.hashes)-1)
	h.calls++
	return h.hashes[i], nil
}

func newTestExecutor(opts Options) (*Executor, *input.Fake, *fakeClock) {
	in := input.NewFake(800, 600)
	clock := newFakeClock()
	opts.Clock = clock
	return New(in, opts), in, clock
}

func TestExecutorCallOrder(t *testing.T) {
	tests := []struct {
		name   string
		action actions.Action
		want   []string
		result Result
	}{
		{
			name:   "click with modifiers",
			action: actions.Action{Type: actions.Click, X: 10, Y: 20, Keys: []string{"ctrl", "shift"}},
			want: []string{"ScreenSize", "MoveTo(10,20)", "KeyDown(Control_L)", "KeyDown(Shift_L)",
				"ButtonDown(left)", "ButtonUp(left)", "KeyUp(Shift_L)", "KeyUp(Control_L)"},
		},
		{
			name:   "right click",
			action: actions.Action{Type: actions.Click, X: 0, Y: 0, Button: actions.Right},
			want:   []string{"ScreenSize", "MoveTo(0,0)", "ButtonDown(right)", "ButtonUp(right)"},
		},
		{
			name:   "wheel click is middle",
			action: actions.Action{Type: actions.Click, X: 799, Y: 599, Button: actions.Wheel},
			want:   []string{"ScreenSize", "MoveTo(799,599)", "ButtonDown(middle)", "ButtonUp(middle)"},
		},
		{
			name:   "back and forward",
			action: actions.Action{Type: actions.Click, X: 1, Y: 2, Button: "BACK"},
			want:   []string{"ScreenSize", "MoveTo(1,2)", "ButtonDown(back)", "ButtonUp(back)"},
		},
		{
			name:   "double click",
			action: actions.Action{Type: actions.DoubleClick, X: 5, Y: 6, Keys: []string{"alt"}},
			want: []string{"ScreenSize", "MoveTo(5,6)", "KeyDown(Alt_L)", "ButtonDown(left)", "ButtonUp(left)",
				"ButtonDown(left)", "ButtonUp(left)", "KeyUp(Alt_L)"},
		},
		{
			name:   "drag with intermediate motion",
			action: actions.Action{Type: actions.Drag, Path: []actions.Point{{X: 0, Y: 0}, {X: 10, Y: 0}, {X: 100, Y: 0}}, Keys: []string{"shift"}},
			want: []string{"ScreenSize", "MoveTo(0,0)", "KeyDown(Shift_L)", "ButtonDown(left)",
				"MoveTo(10,0)", "MoveTo(40,0)", "MoveTo(70,0)", "MoveTo(100,0)", "ButtonUp(left)", "KeyUp(Shift_L)"},
		},
		{
			name:   "move with modifiers held",
			action: actions.Action{Type: actions.Move, X: 7, Y: 8, Keys: []string{"super"}},
			want:   []string{"ScreenSize", "KeyDown(Super_L)", "MoveTo(7,8)", "KeyUp(Super_L)"},
		},
		{
			name:   "scroll with modifiers",
			action: actions.Action{Type: actions.Scroll, X: 3, Y: 4, ScrollX: -10, ScrollY: 130, Keys: []string{"ctrl"}},
			want:   []string{"ScreenSize", "MoveTo(3,4)", "KeyDown(Control_L)", "Wheel(-1,2)", "KeyUp(Control_L)"},
			result: Result{ScrollSteps: actions.Point{X: -1, Y: 2}},
		},
		{
			name:   "scroll by nothing only moves",
			action: actions.Action{Type: actions.Scroll, X: 3, Y: 4, Keys: []string{"ctrl"}},
			want:   []string{"ScreenSize", "MoveTo(3,4)"},
		},
		{
			name:   "keypress in order, released in reverse",
			action: actions.Action{Type: actions.Keypress, Keys: []string{"ctrl", "shift", "a"}},
			want: []string{"KeyDown(Control_L)", "KeyDown(Shift_L)", "KeyDown(a)",
				"KeyUp(a)", "KeyUp(Shift_L)", "KeyUp(Control_L)"},
		},
		{
			name:   "type with line breaks and tab",
			action: actions.Action{Type: actions.TypeText, Text: "é\r\nb\tc\r"},
			want: []string{`PrepareText("é\nb\tc\r")`, "TypeRune('é')", `TypeRune('\n')`, "TypeRune('b')", `TypeRune('\t')`,
				"TypeRune('c')", `TypeRune('\r')`},
		},
		{
			name:   "screenshot does nothing",
			action: actions.Action{Type: actions.Screenshot},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex, in, _ := newTestExecutor(Options{})
			res, err := ex.Do(context.Background(), tt.action)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if got := in.Strings(); !reflect.DeepEqual(got, tt.want) && len(got)+len(tt.want) > 0 {
				t.Errorf("calls:\n got %q\nwant %q", got, tt.want)
			}
			if res.ScrollSteps != tt.result.ScrollSteps {
				t.Errorf("scroll steps = %v, want %v", res.ScrollSteps, tt.result.ScrollSteps)
			}
			if d := in.Down(); len(d) > 0 {
				t.Errorf("still down: %v", d)
			}
		})
	}
}

func TestDoubleClickInterval(t *testing.T) {
	ex, _, clock := newTestExecutor(Options{})
	if _, err := ex.Do(context.Background(), actions.Action{Type: actions.DoubleClick, X: 1, Y: 1}); err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{DefaultDoubleClickInterval}; !reflect.DeepEqual(clock.sleeps, want) {
		t.Errorf("sleeps = %v, want %v", clock.sleeps, want)
	}
	ex, _, clock = newTestExecutor(Options{DoubleClickInterval: 5 * time.Millisecond})
	res, err := ex.Do(context.Background(), actions.Action{Type: actions.DoubleClick, X: 1, Y: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{5 * time.Millisecond}; !reflect.DeepEqual(clock.sleeps, want) {
		t.Errorf("sleeps = %v, want %v", clock.sleeps, want)
	}
	if res.Duration != 5*time.Millisecond {
		t.Errorf("duration = %v, want the 5ms the clock advanced", res.Duration)
	}
}

func TestOffScreenPointsRejected(t *testing.T) {
	tests := []actions.Action{
		{Type: actions.Click, X: -1, Y: 0},
		{Type: actions.Click, X: 800, Y: 0},
		{Type: actions.DoubleClick, X: 0, Y: 600},
		{Type: actions.Move, X: 0, Y: -5, Keys: []string{"ctrl"}},
		{Type: actions.Scroll, X: 1000, Y: 1000, ScrollY: 100, Keys: []string{"shift"}},
		{Type: actions.Drag, Path: []actions.Point{{X: 0, Y: 0}, {X: 10, Y: 10}, {X: 10, Y: 600}}, Keys: []string{"ctrl"}},
	}
	for _, a := range tests {
		t.Run(a.String(), func(t *testing.T) {
			ex, in, _ := newTestExecutor(Options{})
			_, err := ex.Do(context.Background(), a)
			if err == nil || !strings.Contains(err.Error(), "off the 800x600 screen") {
				t.Fatalf("err = %v, want an off-screen error", err)
			}
			if got := in.Strings(); !reflect.DeepEqual(got, []string{"ScreenSize"}) {
				t.Errorf("calls = %q, want only ScreenSize", got)
			}
		})
	}
}

func TestInvalidActionsDoNothing(t *testing.T) {
	tests := []struct {
		action actions.Action
		want   string
	}{
		{actions.Action{Type: actions.Keypress, Keys: []string{"ctrl", "hyperspace"}}, `unknown key name "hyperspace"`},
		{actions.Action{Type: actions.Click, X: 1, Y: 1, Button: "thumb"}, `unknown button "thumb"`},
		{actions.Action{Type: actions.TypeText, Text: "a\x1bb"}, "control character U+001B"},
		{actions.Action{Type: actions.Drag, Path: []actions.Point{{X: 1, Y: 1}}}, "at least 2 points"},
		{actions.Action{Type: "teleport"}, "unknown action type"},
	}
	for _, tt := range tests {
		ex, in, _ := newTestExecutor(Options{})
		_, err := ex.Do(context.Background(), tt.action)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err = %v, want it to contain %q", tt.action, err, tt.want)
		}
		if calls := in.Strings(); len(calls) > 0 {
			t.Errorf("%v: calls = %q, want none", tt.action, calls)
		}
	}
}

// TestFailureReleasesEverything fails each call of each action in turn and
// checks that nothing stays pressed.
func TestFailureReleasesEverything(t *testing.T) {
	acts := []actions.Action{
		{Type: actions.Click, X: 10, Y: 20, Keys: []string{"ctrl", "shift"}},
		{Type: actions.DoubleClick, X: 10, Y: 20, Keys: []string{"alt"}},
		{Type: actions.Drag, Path: []actions.Point{{X: 0, Y: 0}, {X: 100, Y: 50}}, Keys: []string{"ctrl", "alt"}},
		{Type: actions.Move, X: 1, Y: 1, Keys: []string{"shift"}},
		{Type: actions.Scroll, X: 1, Y: 1, ScrollY: -200, Keys: []string{"ctrl"}},
		{Type: actions.Keypress, Keys: []string{"ctrl", "alt", "delete"}},
		{Type: actions.TypeText, Text: "abc"},
	}
	for _, a := range acts {
		ex, in, _ := newTestExecutor(Options{})
		if _, err := ex.Do(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		total := len(in.Calls())
		for n := 1; n <= total; n++ {
			ex, in, _ := newTestExecutor(Options{})
			in.FailAt(n, nil)
			_, err := ex.Do(context.Background(), a)
			if !errors.Is(err, input.ErrFakeFailure) {
				t.Errorf("%v, call %d fails: err = %v, want input.ErrFakeFailure", a, n, err)
			}
			if !strings.HasPrefix(err.Error(), string(a.Type)+": ") {
				t.Errorf("%v: error %q does not name the action", a, err)
			}
			if d := in.Down(); len(d) > 0 {
				t.Errorf("%v, call %d fails: still down %v; calls %q", a, n, d, in.Strings())
			}
		}
	}
}

func TestFailedPressIsReleased(t *testing.T) {
	ex, in, _ := newTestExecutor(Options{})
	in.FailAt(2, nil) // KeyDown(Shift_L)
	if _, err := ex.Do(context.Background(), actions.Action{Type: actions.Keypress, Keys: []string{"ctrl", "shift", "a"}}); err == nil {
		t.Fatal("no error")
	}
	want := []string{"KeyDown(Control_L)", "KeyDown(Shift_L)", "KeyUp(Shift_L)", "KeyUp(Control_L)"}
	if got := in.Strings(); !reflect.DeepEqual(got, want) {
		t.Errorf("calls:\n got %q\nwant %q", got, want)
	}
}

func TestReleaseFailureKeptForReleaseAll(t *testing.T) {
	var logged []string
	ex, in, _ := newTestExecutor(Options{Logf: func(f string, args ...any) { logged = append(logged, f) }})
	// click+ctrl: ScreenSize, MoveTo, KeyDown(ctrl), ButtonDown fails; then
	// the release of the button (5) and of ctrl (6): ctrl's fails.
	in.FailAt(4, nil)
	in.FailAt(6, nil)
	_, err := ex.Do(context.Background(), actions.Action{Type: actions.Click, X: 1, Y: 1, Keys: []string{"ctrl"}})
	if err == nil || !strings.Contains(err.Error(), "release key Control_L") {
		t.Fatalf("err = %v, want it to report the failed release", err)
	}
	if len(logged) == 0 {
		t.Error("the release was not logged")
	}
	in.Reset()
	if err := ex.ReleaseAll(); err != nil {
		t.Fatal(err)
	}
	if got, want := in.Strings(), []string{"KeyUp(Control_L)"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ReleaseAll calls = %q, want %q", got, want)
	}
	in.Reset()
	if err := ex.ReleaseAll(); err != nil || len(in.Calls()) > 0 {
		t.Errorf("second ReleaseAll: err %v, calls %q; want nothing to do", err, in.Strings())
	}
}

// TestCancelMidAction: a cancel during an action stops it at once, with
// what it pressed released; during PrepareText (its wait for the
// applications) nothing is typed.
func TestCancelMidAction(t *testing.T) {
	for _, tc := range []struct {
		name   string
		action actions.Action
		// cancelAt says, for the nth call, whether to cancel during it.
		cancelAt func(n int, c input.Call) bool
		err      string // in the error, beside context.Canceled
		calls    []string
	}{
		{
			"type", actions.Action{Type: actions.TypeText, Text: "abcdef"},
			func(n int, _ input.Call) bool { return n == 4 }, // PrepareText and 3 characters
			"after 3 of 6 characters",
			[]string{`PrepareText("abcdef")`, "TypeRune('a')", "TypeRune('b')", "TypeRune('c')"},
		},
		{
			"preparing type", actions.Action{Type: actions.TypeText, Text: "ab"},
			func(_ int, c input.Call) bool { return c.Op == "PrepareText" },
			"after 0 of 2 characters",
			[]string{`PrepareText("ab")`},
		},
		{
			"drag", actions.Action{Type: actions.Drag, Path: []actions.Point{{X: 0, Y: 0}, {X: 10, Y: 0}, {X: 20, Y: 0}}, Keys: []string{"ctrl"}},
			func(_ int, c input.Call) bool { return c.String() == "MoveTo(10,0)" },
			"",
			[]string{"ScreenSize", "MoveTo(0,0)", "KeyDown(Control_L)", "ButtonDown(left)", "MoveTo(10,0)", "ButtonUp(left)", "KeyUp(Control_L)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex, in, _ := newTestExecutor(Options{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			in.OnCall(func(n int, c input.Call) {
				if tc.cancelAt(n, c) {
					cancel()
				}
			})
			_, err := ex.Do(ctx, tc.action)
			if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want context.Canceled saying %q", err, tc.err)
			}
			if got := in.Strings(); !reflect.DeepEqual(got, tc.calls) {
				t.Errorf("calls:\n got %q\nwant %q", got, tc.calls)
			}
		})
	}
}

func TestPrepareFailureTypesNothing(t *testing.T) {
	ex, in, _ := newTestExecutor(Options{})
	in.FailAt(1, nil)
	_, err := ex.Do(context.Background(), actions.Action{Type: actions.TypeText, Text: "ab"})
	if !errors.Is(err, input.ErrFakeFailure) || !strings.Contains(err.Error(), "prepare the keyboard") {
		t.Fatalf("err = %v, want the prepare failure", err)
	}
	if got := len(in.Calls()); got != 1 {
		t.Errorf("%d calls, want 1", got)
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	ex, in, _ := newTestExecutor(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ex.Do(ctx, actions.Action{Type: actions.Click, X: 1, Y: 1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if calls := in.Strings(); len(calls) > 0 {
		t.Errorf("calls = %q, want none", calls)
	}
}

func TestWheelSteps(t *testing.T) {
	tests := []struct {
		px, per, want int
	}{
		{0, 60, 0},
		{1, 60, 1}, {-1, 60, -1}, // tiny requests still scroll
		{29, 60, 1}, {30, 60, 1}, {59, 60, 1}, {60, 60, 1},
		{89, 60, 1}, {90, 60, 2}, {-90, 60, -2}, {-91, 60, -2},
		{120, 60, 2}, {-300, 60, -5}, {301, 100, 3}, {350, 100, 4}, {-350, 100, -4},
		{MaxWheelSteps * 60, 60, MaxWheelSteps}, {-MaxWheelSteps * 60, 60, -MaxWheelSteps},
	}
	for _, tt := range tests {
		got, err := wheelSteps(tt.px, tt.per)
		if err != nil || got != tt.want {
			t.Errorf("wheelSteps(%d, %d) = %d, %v; want %d", tt.px, tt.per, got, err, tt.want)
		}
	}
	for _, px := range []int{MaxWheelSteps*60 + 30, -(MaxWheelSteps*60 + 30), math.MaxInt, math.MinInt} {
		if _, err := wheelSteps(px, 60); err == nil || !strings.Contains(err.Error(), "at most") {
			t.Errorf("wheelSteps(%d) err = %v, want a bound error", px, err)
		}
	}
}

func TestScrollTooFarDoesNothing(t *testing.T) {
	ex, in, _ := newTestExecutor(Options{ScrollPixelsPerStep: 1})
	_, err := ex.Do(context.Background(), actions.Action{Type: actions.Scroll, X: 1, Y: 1, ScrollY: MaxWheelSteps + 1})
	if err == nil || !strings.Contains(err.Error(), "scroll_y") {
		t.Fatalf("err = %v, want a scroll_y error", err)
	}
	if calls := in.Strings(); len(calls) > 0 {
		t.Errorf("calls = %q, want none", calls)
	}
}

func TestInterpolate(t *testing.T) {
	path := []actions.Point{{X: 0, Y: 0}, {X: 5, Y: 5}, {X: 700, Y: 100}, {X: 700, Y: 100}, {X: 10, Y: 590}}
	got := interpolate(path, 32)
	prev, next := path[0], 1
	for _, p := range got {
		if next < len(path) && p == path[next] {
			next++
		}
		if d := max(abs(p.X-prev.X), abs(p.Y-prev.Y)); d > 32 {
			t.Errorf("jump of %d px from %v to %v", d, prev, p)
		}
		prev = p
	}
	if next != len(path) {
		t.Errorf("path points not all visited in order: %v", got)
	}
	if got[len(got)-1] != path[len(path)-1] {
		t.Errorf("ends at %v, want %v", got[len(got)-1], path[len(path)-1])
	}
	// 700 px in one segment: capped at maxDragSubsteps motion events.
	if n := len(interpolate([]actions.Point{{X: 0, Y: 0}, {X: 700, Y: 0}}, 1)); n != maxDragSubsteps {
		t.Errorf("%d motion events for one long segment, want %d", n, maxDragSubsteps)
	}
}

func TestWait(t *testing.T) {
	t.Run("settles", func(t *testing.T) {
		h := &seqHasher{hashes: []uint64{1, 2, 3, 3}}
		ex, _, _ := newTestExecutor(Options{Frames: h})
		res, err := ex.Do(context.Background(), actions.Action{Type: actions.Wait})
		if err != nil {
			t.Fatal(err)
		}
		// Changes at 50 and 100 ms, then quiet for 250 ms.
		if !res.Settled || res.Waited != 350*time.Millisecond {
			t.Errorf("got settled %v after %v, want settled after 350ms", res.Settled, res.Waited)
		}
	})
	t.Run("static screen settles after the quiet time", func(t *testing.T) {
		h := &seqHasher{hashes: []uint64{7}}
		ex, _, _ := newTestExecutor(Options{Frames: h, WaitQuiet: 100 * time.Millisecond, WaitPoll: 10 * time.Millisecond})
		res, err := ex.Do(context.Background(), actions.Action{Type: actions.Wait})
		if err != nil || !res.Settled || res.Waited != 100*time.Millisecond {
			t.Errorf("got %+v, %v; want settled after 100ms", res, err)
		}
	})
	t.Run("times out", func(t *testing.T) {
		seq := make([]uint64, 1000)
		for i := range seq {
			seq[i] = uint64(i)
		}
		ex, _, _ := newTestExecutor(Options{Frames: &seqHasher{hashes: seq}})
		res, err := ex.Do(context.Background(), actions.Action{Type: actions.Wait})
		if err != nil {
			t.Fatal(err)
		}
		if res.Settled || res.Waited != DefaultWaitTimeout {
			t.Errorf("got settled %v after %v, want unsettled after %v", res.Settled, res.Waited, DefaultWaitTimeout)
		}
	})
	t.Run("no frames", func(t *testing.T) {
		ex, _, _ := newTestExecutor(Options{})
		if _, err := ex.Do(context.Background(), actions.Action{Type: actions.Wait}); err == nil || !strings.Contains(err.Error(), "Frames") {
			t.Errorf("err = %v, want a missing frame source error", err)
		}
	})
	t.Run("hash error", func(t *testing.T) {
		boom := errors.New("capture broke")
		ex, _, _ := newTestExecutor(Options{Frames: &seqHasher{err: boom}})
		if _, err := ex.Do(context.Background(), actions.Action{Type: actions.Wait}); !errors.Is(err, boom) {
			t.Errorf("err = %v, want %v", err, boom)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ex := New(input.NewFake(10, 10), Options{Frames: &seqHasher{hashes: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9}}})
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
		defer cancel()
		res, err := ex.Do(ctx, actions.Action{Type: actions.Wait})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the deadline", err)
		}
		if res.Waited < 100*time.Millisecond || res.Waited > time.Second {
			t.Errorf("waited %v, want about 120ms", res.Waited)
		}
	})
}
