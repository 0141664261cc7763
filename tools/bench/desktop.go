package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/tools/bench/probe"
)

// desktopStart bounds the desktop's start: connecting, painting, mapping.
const desktopStart = 20 * time.Second

// desktop is the host's side of the bench's deterministic desktop and its
// witness: the probe program in desktop mode (probe.DesktopMode) is the X
// client in the guest, and reports every input event it receives; desktop
// keeps them, with the time the guest saw each, for waitFor and waitTyped.
type desktop struct {
	target image.Rectangle

	cmd    *exec.Cmd
	in     io.WriteCloser
	exited chan struct{} // closed when the reader has seen the end of the output

	mu      sync.Mutex
	events  []probe.Event
	changed chan struct{} // closed and replaced on every message
	acks    int           // Changed answers so far
	flipped bool
	err     error // the first X error, or why the output ended
}

// openDesktop starts the probe at path as the desktop of a size×size screen
// with env (the guest's DISPLAY and XAUTHORITY), and returns once its window
// has the focus.
func openDesktop(ctx context.Context, path string, env []string, size Size) (*desktop, error) {
	cmd := exec.Command(path, probe.DesktopMode, strconv.Itoa(size.W), strconv.Itoa(size.H))
	cmd.Env = env
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("desktop: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("desktop: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("desktop: start %s (build it with 'make build'): %w", path, err)
	}
	d := &desktop{cmd: cmd, in: in, exited: make(chan struct{}), changed: make(chan struct{})}
	ready := make(chan probe.DesktopMsg, 1)
	go d.read(out, ready)
	timer := time.NewTimer(desktopStart)
	defer timer.Stop()
	select {
	case m := <-ready:
		if m.Target != nil {
			d.target = *m.Target
			return d, nil
		}
		d.close()
		return nil, fmt.Errorf("desktop: %s", m.Err)
	case <-d.exited:
		d.close()
		return nil, fmt.Errorf("desktop: exited before its window showed: %v (it said: %s)", d.readErr(), strings.TrimSpace(stderr.String()))
	case <-timer.C:
		d.close()
		return nil, fmt.Errorf("desktop: window not shown within %v", desktopStart)
	case <-ctx.Done():
		d.close()
		return nil, ctx.Err()
	}
}

// read takes the desktop's messages until its output ends. The one with
// the target goes to ready, or an error before it (events may come first:
// showing the window moves the pointer).
func (d *desktop) read(out io.Reader, ready chan<- probe.DesktopMsg) {
	defer close(d.exited)
	started := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var m probe.DesktopMsg
		err := json.Unmarshal(sc.Bytes(), &m)
		if !started && err == nil && (m.Target != nil || m.Err != "") {
			started = true
			ready <- m
			continue
		}
		d.mu.Lock()
		switch {
		case err != nil:
			d.fail(fmt.Errorf("bad line %q: %w", sc.Text(), err))
		case m.Err != "":
			d.fail(errors.New(m.Err))
		case m.Event != nil:
			d.events = append(d.events, *m.Event)
		case m.Changed:
			d.acks++
		}
		d.flipped = m.Flipped
		close(d.changed)
		d.changed = make(chan struct{})
		d.mu.Unlock()
	}
	d.mu.Lock()
	d.fail(fmt.Errorf("output ended: %v", sc.Err()))
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
}

// fail keeps the first error; d.mu is held.
func (d *desktop) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *desktop) readErr() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// close ends the desktop: the end of its input closes the window; it is
// killed if it has not exited within a few seconds.
func (d *desktop) close() {
	d.in.Close()
	select {
	case <-d.exited:
	case <-time.After(5 * time.Second):
		_ = d.cmd.Process.Kill()
	}
	_ = d.cmd.Wait()
}

// change flips the target and returns once the server has drawn it: the
// screen is not the one agentd saw last.
func (d *desktop) change(ctx context.Context) error {
	d.mu.Lock()
	want := d.acks + 1
	d.mu.Unlock()
	if _, err := io.WriteString(d.in, probe.ChangeLine+"\n"); err != nil {
		return fmt.Errorf("desktop: %w", err)
	}
	_, err := d.until(ctx, eventTimeout, "change of the target", func() (bool, error) { return d.acks >= want, nil })
	return err
}

// shownTargetColor is the colour the target has after the clicks so far.
func (d *desktop) shownTargetColor() color.RGBA {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.flipped {
		return probe.FlipColor
	}
	return probe.TargetColor
}

// mark is the position of the next event, for waitFor and waitTyped.
func (d *desktop) mark() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.events)
}

// reset forgets the events so far.
func (d *desktop) reset() {
	d.mu.Lock()
	d.events = nil
	d.mu.Unlock()
}

// until waits, up to timeout, until done (called with d.mu held) holds.
// Its error is the desktop's first one, which ends the wait: a timeout is
// reported as the absence of what.
func (d *desktop) until(ctx context.Context, timeout time.Duration, what string, done func() (bool, error)) (timedOut bool, err error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		d.mu.Lock()
		ok, err := done()
		changed, derr := d.changed, d.err
		d.mu.Unlock()
		if ok || err != nil {
			return false, err
		}
		if derr != nil {
			return false, fmt.Errorf("desktop: %w", derr)
		}
		select {
		case <-changed:
		case <-timer.C:
			return true, fmt.Errorf("desktop: no %s within %v", what, timeout)
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// waitFor waits until an event from position from on satisfies ok, and
// returns it.
func (d *desktop) waitFor(ctx context.Context, from int, timeout time.Duration, what string, ok func(probe.Event) bool) (probe.Event, error) {
	var found probe.Event
	_, err := d.until(ctx, timeout, what, func() (bool, error) {
		for i := from; i < len(d.events); i++ {
			if ok(d.events[i]) {
				found = d.events[i]
				return true, nil
			}
		}
		from = max(from, len(d.events))
		return false, nil
	})
	return found, err
}

// waitTyped waits until n characters were typed from event position from
// on, or timeout passed, and returns the text and when its last character
// arrived. Characters that never came are a result, not an error.
func (d *desktop) waitTyped(ctx context.Context, from, n int, timeout time.Duration) (string, time.Time, error) {
	var text string
	var last time.Time
	timedOut, err := d.until(ctx, timeout, "typed text", func() (bool, error) {
		var b strings.Builder
		count := 0
		for _, e := range d.events[min(from, len(d.events)):] {
			if e.Kind == probe.KeyPress && e.Char != 0 {
				b.WriteRune(e.Char)
				last = time.Unix(0, e.Seen)
				count++
			}
		}
		text = b.String()
		return count >= n, nil
	})
	if timedOut {
		return text, last, nil
	}
	return text, last, err
}
