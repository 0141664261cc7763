package bench

import (
	"context"
	"fmt"
	"image"
	"strconv"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/tools/bench/probe"
)

// eventTimeout bounds the wait for an input event at the desktop.
const eventTimeout = 5 * time.Second

// Input figure IDs.
const (
	idClick    = "click"
	idMove     = "move"
	idKeypress = "keypress"
	idXdoClick = "xdotool-click"
	idXdoMove  = "xdotool-move"
	idXdoKey   = "xdotool-key"
	// pressedKey is both agentd's key name and xdotool's keysym.
	pressedKey = "x"
)

// inputPoints are two points clear of the effect target, alternated so
// that every move really moves the pointer.
func (b *sizeBench) inputPoints() [2]image.Point {
	p := image.Pt(b.size.W/3, b.size.H/2)
	return [2]image.Point{p, p.Add(image.Pt(37, 23))}
}

// measureInput times click, move and keypress from the request until agentd
// acknowledged it and the desktop received the event, next to xdotool
// shell-outs timed until xdotool exited and the desktop received the event.
// Coordinates are screen coordinates: the last screenshot was native.
func (b *sizeBench) measureInput(ctx context.Context) ([]Figure, error) {
	pts := b.inputPoints()
	// next is the input point where the pointer is not: a move to where it
	// already is would send no event to wait for. Keypresses leave it.
	pointer := image.Pt(b.size.W/2, b.size.H/2)
	next := func() image.Point {
		p := pts[0]
		if pointer == p {
			p = pts[1]
		}
		pointer = p
		return p
	}
	at := func(kind string, p image.Point) func(probe.Event) bool {
		return func(e probe.Event) bool { return e.Kind == kind && e.X == p.X && e.Y == p.Y }
	}
	// roundTrip times act until it returned and the desktop saw an event
	// matching seen (at the time the desktop received it: the guest's
	// clock is this machine's).
	roundTrip := func(ctx context.Context, what string, act func(context.Context) error, seen func(probe.Event) bool) (time.Duration, error) {
		from := b.desk.mark()
		start := time.Now()
		if err := act(ctx); err != nil {
			return 0, err
		}
		acked := time.Since(start)
		e, err := b.desk.waitFor(ctx, from, eventTimeout, what, seen)
		if err != nil {
			return 0, err
		}
		return max(acked, time.Unix(0, e.Seen).Sub(start)), nil
	}
	keyReleased := func(e probe.Event) bool { return e.Kind == probe.KeyRelease }
	cs := []contender{
		{id: idClick, run: func(ctx context.Context) (time.Duration, error) {
			p := next()
			return roundTrip(ctx, "button release", func(ctx context.Context) error {
				_, err := b.client.Click(ctx, p.X, p.Y, actions.Left)
				return err
			}, at(probe.ButtonRelease, p))
		}},
		{id: idMove, run: func(ctx context.Context) (time.Duration, error) {
			p := next()
			return roundTrip(ctx, "motion", func(ctx context.Context) error {
				_, err := b.client.Move(ctx, p.X, p.Y)
				return err
			}, at(probe.Motion, p))
		}},
		{id: idKeypress, run: func(ctx context.Context) (time.Duration, error) {
			return roundTrip(ctx, "key release", func(ctx context.Context) error {
				_, err := b.client.Keypress(ctx, pressedKey)
				return err
			}, keyReleased)
		}},
	}
	cs = append(cs, b.codeContenders(next, roundTrip, at)...)
	xdo, missing := xdotoolTool.find()
	if missing == "" {
		xy := func(p image.Point) []string { return []string{"mousemove", strconv.Itoa(p.X), strconv.Itoa(p.Y)} }
		cs = append(cs,
			contender{id: idXdoClick, peer: true, run: func(ctx context.Context) (time.Duration, error) {
				p := next()
				return roundTrip(ctx, "button release", func(ctx context.Context) error {
					return b.shell.run(ctx, xdo, append(xy(p), "click", "1")...)
				}, at(probe.ButtonRelease, p))
			}},
			contender{id: idXdoMove, peer: true, run: func(ctx context.Context) (time.Duration, error) {
				p := next()
				return roundTrip(ctx, "motion", func(ctx context.Context) error {
					return b.shell.run(ctx, xdo, xy(p)...)
				}, at(probe.Motion, p))
			}},
			contender{id: idXdoKey, peer: true, run: func(ctx context.Context) (time.Duration, error) {
				return roundTrip(ctx, "key release", func(ctx context.Context) error {
					return b.shell.run(ctx, xdo, "key", pressedKey)
				}, keyReleased)
			}},
		)
	}
	res, err := runRounds(ctx, cs, turns(b.duration, 3))
	b.desk.reset()
	if err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	fig := func(id, name string, peer bool) Figure {
		f := timeFigure(id, name, res.samples[id])
		f.Peer = peer
		f.Missing = res.missing(id, missing)
		return f
	}
	xClick := fig(idXdoClick, "xdotool mousemove X Y click 1", true)
	xMove := fig(idXdoMove, "xdotool mousemove X Y", true)
	xKey := fig(idXdoKey, "xdotool key "+pressedKey, true)
	click := fig(idClick, "click round trip (request → ack → event at the window)", false)
	click.compare(xClick)
	move := fig(idMove, "move round trip", false)
	move.compare(xMove)
	key := fig(idKeypress, "keypress round trip", false)
	key.compare(xKey)
	return append([]Figure{click, move, key, xClick, xMove, xKey}, b.codeFigures(res, click)...), nil
}
