package bench

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"
)

// typingText is typed in every typing sample: every character is on the
// default US layout, so neither agentd nor xdotool needs to remap keys.
const typingText = "The quick brown fox jumps over the lazy dog; " +
	"Sphinx of black quartz, judge my vow! 0123456789 (a+b=c) ~#$%?"

// Typing figure IDs.
const (
	idType    = "type"
	idXdoType = "xdotool-type"
)

// measureTyping types typingText through agentd and through `xdotool type`
// (default 12 ms delay between keys) and times each until the acknowledgement
// and the last character at the desktop, checking the text exactly.
func (b *sizeBench) measureTyping(ctx context.Context) ([]Figure, error) {
	n := utf8.RuneCountInString(typingText)
	inexact := map[string]int{}
	// allow is how long the last character may trail the command.
	allow := 2*time.Second + time.Duration(n)*50*time.Millisecond
	typed := func(id string, act func(context.Context) error) func(context.Context) (time.Duration, error) {
		return func(ctx context.Context) (time.Duration, error) {
			from := b.desk.mark()
			start := time.Now()
			if err := act(ctx); err != nil {
				return 0, err
			}
			acked := time.Now()
			got, last, err := b.desk.waitTyped(ctx, from, n, allow)
			if err != nil {
				return 0, err
			}
			if got != typingText {
				inexact[id]++
			}
			if last.After(acked) {
				return last.Sub(start), nil
			}
			return acked.Sub(start), nil
		}
	}
	cs := []contender{{id: idType, run: typed(idType, func(ctx context.Context) error {
		_, err := b.client.Type(ctx, typingText)
		return err
	}), warmed: func() { inexact[idType] = 0 }}}
	xdo, missing := xdotoolTool.find()
	if missing == "" {
		cs = append(cs, contender{id: idXdoType, peer: true, run: typed(idXdoType, func(ctx context.Context) error {
			return b.shell.run(ctx, xdo, "type", "--", typingText)
		}), warmed: func() { inexact[idXdoType] = 0 }})
	}
	res, err := runRounds(ctx, cs, turns(b.duration, 3))
	b.desk.reset()
	if err != nil {
		return nil, fmt.Errorf("typing: %w", err)
	}
	fig := func(id, name string, peer bool) Figure {
		f := rateFigure(id, name, UnitCharsPerSec, float64(n), res.samples[id])
		f.Peer = peer
		f.Note = fmt.Sprintf("%d of %d runs exact", f.N-inexact[id], f.N)
		f.Missing = res.missing(id, missing)
		return f
	}
	xdoType := fig(idXdoType, "xdotool type (default delay)", true)
	typ := fig(idType, fmt.Sprintf("typing %d characters, checked at the window", n), false)
	typ.compare(xdoType)
	return []Figure{typ, xdoType}, nil
}
