// Package executor performs the computer tool's actions (package actions) in
// screen coordinates on an input.Device: clicks, drags, scrolls, typing and
// waits, each built from single presses and releases, and releases whatever
// it holds when an action fails or is cancelled.
package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/agentd/input"
	"github.com/agentd-dev/agentd/internal/ctxsleep"
	"github.com/agentd-dev/agentd/internal/defaults"
)

// FrameHasher hashes the current screen contents; the daemon provides it from
// screen capture. Equal hashes mean an unchanged screen.
type FrameHasher interface {
	FrameHash(ctx context.Context) (uint64, error)
}

// Clock is the time source of an Executor; tests replace it to run waits
// without sleeping.
type Clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx ends, whichever is first, and returns
	// ctx's error in the second case.
	Sleep(ctx context.Context, d time.Duration) error
}

// Defaults of Options.
const (
	// DefaultScrollPixelsPerStep is what one wheel step scrolls in the apps a
	// model drives most: Chromium scrolls 53 px per step on X11, Firefox
	// three lines (about 57 px), GTK widgets page^(2/3) (60–90 px). 60 px
	// keeps a request within about a third of what happens on the screen in
	// all of them, erring towards scrolling too little, which the model can
	// correct with another scroll, rather than skipping content.
	DefaultScrollPixelsPerStep = 60
	// DefaultDoubleClickInterval separates the two clicks of a double
	// click: far below the double-click time of GTK (400 ms) and xterm
	// (250 ms), yet not so fast that the second click arrives in the same
	// instant as the first.
	DefaultDoubleClickInterval = 30 * time.Millisecond
	// DefaultDragStepPixels is the largest jump between two motion events
	// of a drag; shorter jumps let apps that track motion (drag thresholds,
	// drawing, sliders) see the path instead of one teleport.
	DefaultDragStepPixels = 32
	// DefaultWaitQuiet is how long the screen must stay unchanged for wait
	// to call it settled (the reasons are at wire.DefaultWaitQuiet).
	DefaultWaitQuiet = wire.DefaultWaitQuiet
	// DefaultWaitTimeout bounds a wait on a screen that never settles.
	DefaultWaitTimeout = 3 * time.Second
	// DefaultWaitPoll is the interval between two frame hashes of a wait.
	DefaultWaitPoll = 50 * time.Millisecond
)

// MaxWheelSteps bounds the wheel steps of one scroll on each axis; a request
// beyond it is an error, not clamped.
const MaxWheelSteps = 1000

// maxDragSubsteps bounds the motion events added between two path points, so
// a long path of far-apart points stays a quick drag.
const maxDragSubsteps = 32

// Options configures an Executor. Zero values mean the defaults.
type Options struct {
	// Frames is the screen's frame hash, needed by wait (an error without).
	Frames FrameHasher
	// ScrollPixelsPerStep converts scroll pixels to wheel steps.
	ScrollPixelsPerStep int
	// DoubleClickInterval is the pause between the two clicks of a double
	// click (from the first release to the second press).
	DoubleClickInterval time.Duration
	// DragStepPixels is the largest jump between two motion events of a
	// drag (in screen pixels, on either axis).
	DragStepPixels int
	// WaitQuiet, WaitTimeout and WaitPoll shape wait: it returns once the
	// frame hash has stayed the same for WaitQuiet, polling every WaitPoll,
	// or after WaitTimeout.
	WaitQuiet   time.Duration
	WaitTimeout time.Duration
	WaitPoll    time.Duration
	// Clock replaces the real clock (for tests).
	Clock Clock
	// Logf, if set, receives operational messages (never typed text).
	Logf func(format string, args ...any)
}

// Result is what one action reports besides success.
type Result struct {
	// ScrollSteps are the wheel steps a scroll sent (+y down, +x right).
	ScrollSteps actions.Point
	// Waited is how long a wait took; Settled is whether the screen
	// stopped changing before the timeout.
	Waited  time.Duration
	Settled bool
	// Duration is the time the action took.
	Duration time.Duration
}

// Executor performs actions whose coordinates are screen coordinates on an
// input.Device. It remembers every key and button it holds down so that a failed or
// cancelled action, or ReleaseAll, releases them. Do and ReleaseAll are
// serialised: ReleaseAll waits for a running action to end.
type Executor struct {
	in   input.Device
	opts Options

	mu   sync.Mutex
	held []held // in the order they went down
}

// held is a key or a button the Executor pressed and has not yet released.
type held struct {
	key    actions.Key
	button actions.Button // "" for a key
}

func (h held) String() string {
	if h.button != "" {
		return "button " + string(h.button)
	}
	return "key " + h.key.Keysym
}

// New returns an Executor on in; opts' zero fields take defaults.
func New(in input.Device, opts Options) *Executor {
	defaults.Positive(&opts.ScrollPixelsPerStep, DefaultScrollPixelsPerStep)
	defaults.Positive(&opts.DoubleClickInterval, DefaultDoubleClickInterval)
	defaults.Positive(&opts.DragStepPixels, DefaultDragStepPixels)
	defaults.Positive(&opts.WaitQuiet, DefaultWaitQuiet)
	defaults.Positive(&opts.WaitTimeout, DefaultWaitTimeout)
	defaults.Positive(&opts.WaitPoll, DefaultWaitPoll)
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	return &Executor{in: in, opts: opts}
}

// Do performs one action. Its points must be on the screen: a point off it
// is an error and nothing is done. Whatever the action pressed is released
// before Do returns, also when it fails or ctx is cancelled half-way.
func (e *Executor) Do(ctx context.Context, a actions.Action) (Result, error) {
	// Validate's errors already name the action type.
	if err := a.Validate(); err != nil {
		return Result{}, &Error{Err: err}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	start := e.opts.Clock.Now()
	res, err := e.do(ctx, a)
	if rerr := e.releaseHeld(); rerr != nil {
		err = errors.Join(err, rerr)
	}
	res.Duration = e.opts.Clock.Now().Sub(start)
	if err != nil {
		return res, &Error{Action: a.Type, Err: err}
	}
	return res, nil
}

// ReleaseAll releases every key and button this Executor still holds, in
// reverse order. It is a no-op when nothing is held.
func (e *Executor) ReleaseAll() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.releaseHeld()
}

func (e *Executor) do(ctx context.Context, a actions.Action) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("not started: %w", err)
	}
	mods, _ := actions.ParseKeys(a.Keys) // Validate checked them
	switch a.Type {
	case actions.Click:
		b, _ := actions.ParseButton(a.Button)
		return Result{}, e.clicks(a, mods, b, 1)
	case actions.DoubleClick:
		return Result{}, e.clicks(a, mods, actions.Left, 2)
	case actions.Drag:
		return Result{}, e.drag(ctx, a.Path, mods)
	case actions.Move:
		return Result{}, e.move(a, mods)
	case actions.Scroll:
		return e.scroll(a, mods)
	case actions.Keypress:
		return Result{}, e.withKeys(mods, func() error { return nil })
	case actions.TypeText:
		return Result{}, e.typeText(ctx, a.Text)
	case actions.Wait:
		return e.wait(ctx)
	case actions.Screenshot:
		// The daemon takes the screenshot after the batch.
		return Result{}, nil
	}
	return Result{}, fmt.Errorf("unknown action type %q", a.Type)
}

// clicks moves to the action's point and clicks n times with mods held; the
// clicks of a double click are DoubleClickInterval apart.
func (e *Executor) clicks(a actions.Action, mods []actions.Key, b actions.Button, n int) error {
	if err := e.checkPoints([]actions.Point{{X: a.X, Y: a.Y}}); err != nil {
		return err
	}
	if err := e.moveTo(a.X, a.Y); err != nil {
		return err
	}
	return e.withKeys(mods, func() error {
		for i := range n {
			if i > 0 {
				// Not cancellable: a cancelled double click must not become a
				// single click, and the pause is a few milliseconds.
				_ = e.opts.Clock.Sleep(context.Background(), e.opts.DoubleClickInterval)
			}
			if err := e.buttonDown(b); err != nil {
				return err
			}
			if err := e.buttonUp(b); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *Executor) move(a actions.Action, mods []actions.Key) error {
	if err := e.checkPoints([]actions.Point{{X: a.X, Y: a.Y}}); err != nil {
		return err
	}
	return e.withKeys(mods, func() error { return e.moveTo(a.X, a.Y) })
}

func (e *Executor) drag(ctx context.Context, path []actions.Point, mods []actions.Key) error {
	if err := e.checkPoints(path); err != nil {
		return err
	}
	if err := e.moveTo(path[0].X, path[0].Y); err != nil {
		return err
	}
	return e.withKeys(mods, func() error {
		if err := e.buttonDown(actions.Left); err != nil {
			return err
		}
		for _, p := range interpolate(path, e.opts.DragStepPixels) {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("cancelled mid-drag: %w", err)
			}
			if err := e.moveTo(p.X, p.Y); err != nil {
				return err
			}
		}
		return e.buttonUp(actions.Left)
	})
}

// interpolate returns the points after path[0] with extra points between two
// that are more than step apart on either axis (at most maxDragSubsteps per
// segment). Every point of path is kept, in order.
func interpolate(path []actions.Point, step int) []actions.Point {
	out := make([]actions.Point, 0, len(path))
	for i := 1; i < len(path); i++ {
		from, to := path[i-1], path[i]
		dx, dy := to.X-from.X, to.Y-from.Y
		n := (max(abs(dx), abs(dy)) + step - 1) / step
		n = min(max(n, 1), maxDragSubsteps)
		for j := 1; j < n; j++ {
			out = append(out, actions.Point{X: from.X + roundDiv(dx*j, n), Y: from.Y + roundDiv(dy*j, n)})
		}
		out = append(out, to)
	}
	return out
}

func (e *Executor) scroll(a actions.Action, mods []actions.Key) (Result, error) {
	sx, err := wheelSteps(a.ScrollX, e.opts.ScrollPixelsPerStep)
	if err != nil {
		return Result{}, fmt.Errorf("scroll_x: %w", err)
	}
	sy, err := wheelSteps(a.ScrollY, e.opts.ScrollPixelsPerStep)
	if err != nil {
		return Result{}, fmt.Errorf("scroll_y: %w", err)
	}
	if err := e.checkPoints([]actions.Point{{X: a.X, Y: a.Y}}); err != nil {
		return Result{}, err
	}
	if err := e.moveTo(a.X, a.Y); err != nil {
		return Result{}, err
	}
	res := Result{ScrollSteps: actions.Point{X: sx, Y: sy}}
	if sx == 0 && sy == 0 {
		return res, nil
	}
	return res, e.withKeys(mods, func() error {
		if err := e.in.Wheel(sx, sy); err != nil {
			return &DeviceError{What: fmt.Sprintf("wheel (%d,%d) steps", sx, sy), Err: err}
		}
		return nil
	})
}

// wheelSteps converts a scroll distance in pixels to wheel steps: the nearest
// whole number (halves away from zero), but never 0 for a non-zero distance,
// so a small scroll still scrolls. The sign is kept.
func wheelSteps(px, perStep int) (int, error) {
	if px == 0 {
		return 0, nil
	}
	q, r := px/perStep, px%perStep // both carry px's sign
	if 2*abs(r) >= perStep {
		q += sign(px)
	}
	if q == 0 {
		q = sign(px)
	}
	if abs(q) > MaxWheelSteps {
		return 0, fmt.Errorf("%d px is %d wheel steps of %d px, at most %d allowed",
			px, q, perStep, MaxWheelSteps)
	}
	return q, nil
}

func (e *Executor) typeText(ctx context.Context, text string) error {
	// A line break is one Return, however the text spells it.
	text = strings.ReplaceAll(text, "\r\n", "\n")
	total := len([]rune(text))
	// All the characters the layout lacks are bound before the first key
	// event, in one keyboard mapping change the applications have caught
	// up with, instead of one change per character between key events.
	if err := e.in.PrepareText(ctx, text); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("cancelled after 0 of %d characters: %w", total, err)
		}
		return &DeviceError{What: "prepare the keyboard", Err: err}
	}
	n := 0
	for _, r := range text {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("cancelled after %d of %d characters: %w", n, total, err)
		}
		if err := e.in.TypeRune(r); err != nil {
			return &DeviceError{What: fmt.Sprintf("character %d of %d", n+1, total), Err: err}
		}
		n++
	}
	return nil
}

func (e *Executor) wait(ctx context.Context) (Result, error) {
	if e.opts.Frames == nil {
		return Result{}, errors.New("no frame source to watch (Options.Frames is nil)")
	}
	clock := e.opts.Clock
	start := clock.Now()
	prev, err := e.opts.Frames.FrameHash(ctx)
	if err != nil {
		return Result{}, &DeviceError{What: "frame hash", Err: err}
	}
	stableSince := clock.Now()
	for {
		now := clock.Now()
		if now.Sub(stableSince) >= e.opts.WaitQuiet {
			return Result{Waited: now.Sub(start), Settled: true}, nil
		}
		left := e.opts.WaitTimeout - now.Sub(start)
		if left <= 0 {
			return Result{Waited: now.Sub(start)}, nil
		}
		if err := clock.Sleep(ctx, min(e.opts.WaitPoll, left)); err != nil {
			return Result{Waited: clock.Now().Sub(start)}, fmt.Errorf("cancelled: %w", err)
		}
		h, err := e.opts.Frames.FrameHash(ctx)
		if err != nil {
			return Result{Waited: clock.Now().Sub(start)}, &DeviceError{What: "frame hash", Err: err}
		}
		if h != prev {
			prev, stableSince = h, clock.Now()
		}
	}
}

// checkPoints rejects points off the screen before anything is done.
func (e *Executor) checkPoints(pts []actions.Point) error {
	w, h, err := e.in.ScreenSize()
	if err != nil {
		return &DeviceError{What: "screen size", Err: err}
	}
	for i, p := range pts {
		if p.X < 0 || p.Y < 0 || p.X >= w || p.Y >= h {
			where := "point"
			if len(pts) > 1 {
				where = fmt.Sprintf("path point %d", i)
			}
			return fmt.Errorf("%s (%d,%d) is off the %dx%d screen", where, p.X, p.Y, w, h)
		}
	}
	return nil
}

// withKeys presses keys in order, runs fn, and releases them in reverse
// order. On failure the caller's releaseHeld releases what is still down.
func (e *Executor) withKeys(keys []actions.Key, fn func() error) error {
	for _, k := range keys {
		if err := e.keyDown(k); err != nil {
			return err
		}
	}
	if err := fn(); err != nil {
		return err
	}
	for i := len(keys) - 1; i >= 0; i-- {
		if err := e.keyUp(keys[i]); err != nil {
			return err
		}
	}
	return nil
}

func (e *Executor) moveTo(x, y int) error {
	if err := e.in.MoveTo(x, y); err != nil {
		return &DeviceError{What: fmt.Sprintf("move to (%d,%d)", x, y), Err: err}
	}
	return nil
}

// keyDown and buttonDown track the press before making it: a press that
// fails may still have reached the display, so it is released too.
func (e *Executor) keyDown(k actions.Key) error {
	e.held = append(e.held, held{key: k})
	if err := e.in.KeyDown(k); err != nil {
		return &DeviceError{What: "press key " + k.Keysym, Err: err}
	}
	return nil
}

func (e *Executor) keyUp(k actions.Key) error {
	if err := e.in.KeyUp(k); err != nil {
		return &DeviceError{What: "release key " + k.Keysym, Err: err}
	}
	e.forget(held{key: k})
	return nil
}

func (e *Executor) buttonDown(b actions.Button) error {
	e.held = append(e.held, held{button: b})
	if err := e.in.ButtonDown(b); err != nil {
		return &DeviceError{What: "press button " + string(b), Err: err}
	}
	return nil
}

func (e *Executor) buttonUp(b actions.Button) error {
	if err := e.in.ButtonUp(b); err != nil {
		return &DeviceError{What: "release button " + string(b), Err: err}
	}
	e.forget(held{button: b})
	return nil
}

// forget drops the latest entry equal to h.
func (e *Executor) forget(h held) {
	for i := len(e.held) - 1; i >= 0; i-- {
		if e.held[i] == h {
			e.held = append(e.held[:i], e.held[i+1:]...)
			return
		}
	}
}

// releaseHeld releases everything still held, last pressed first. It does
// not depend on any context, so it works after a cancel. What fails to
// release stays tracked for a later ReleaseAll.
func (e *Executor) releaseHeld() error {
	if len(e.held) == 0 {
		return nil
	}
	var errs []error
	var kept []held
	for i := len(e.held) - 1; i >= 0; i-- {
		h := e.held[i]
		var err error
		if h.button != "" {
			err = e.in.ButtonUp(h.button)
		} else {
			err = e.in.KeyUp(h.key)
		}
		if err != nil {
			errs = append(errs, &DeviceError{What: "release " + h.String(), Err: err})
			kept = append([]held{h}, kept...)
		}
	}
	e.opts.Logf("actions: released %d held keys/buttons, %d failed", len(e.held)-len(kept), len(kept))
	e.held = kept
	return errors.Join(errs...)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error { return ctxsleep.Sleep(ctx, d) }

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	if v < 0 {
		return -1
	}
	return 1
}

// roundDiv is a/b rounded to the nearest integer (b > 0).
func roundDiv(a, b int) int {
	if a < 0 {
		return -((-a + b/2) / b)
	}
	return (a + b/2) / b
}
