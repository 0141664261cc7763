package chromium

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/agentd-dev/agentd/actions/browser"
)

// The opt-in methods Chromium offers: set_checked, click_at, hover_at and
// run_script. A toolset enables them only when its caller selects them.

// checkedJS says whether the element is a checkbox or radio button and
// whether it is checked.
const checkedJS = `function() {
  const box = this instanceof HTMLInputElement && (this.type === "checkbox" || this.type === "radio");
  const aria = ["checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"].includes(this.getAttribute("role"));
  if (!box && !aria) return {ok: false, checked: false};
  return {ok: true, checked: box ? this.checked : this.getAttribute("aria-checked") === "true"};
}`

// SetChecked clicks a checkbox or radio button when its state differs from
// the one asked for, then checks the page took it. When it already is in
// that state the ref is still checked, and nothing is clicked.
func (b *Browser) SetChecked(ctx context.Context, args browser.SetCheckedArgs) (*string, error) {
	return b.onTarget(ctx, args.TabID, args.Target, func(ctx context.Context, s *chromedp.Target, obj runtime.RemoteObjectID, _ refEntry) error {
		var st struct{ OK, Checked bool }
		if err := callOn(ctx, s, obj, checkedJS, &st); err != nil {
			return err
		}
		if !st.OK {
			return browser.NewBrowserError(fmt.Sprintf("ref %q is not a checkbox or radio button", args.Target))
		}
		if st.Checked == args.Checked {
			return nil
		}
		x, y, err := point(ctx, s, obj, args.Target)
		if err != nil {
			return err
		}
		if err := clickAt(ctx, s, x, y, input.MouseButtonLeft, 1, 0); err != nil {
			return err
		}
		if err := callOn(ctx, s, obj, checkedJS, &st); err != nil {
			return err
		}
		if st.Checked != args.Checked {
			return browser.NewBrowserError(fmt.Sprintf("ref %q: the page did not take the new state", args.Target))
		}
		return nil
	})
}

// clickAt presses and releases a button count times at (x, y).
func clickAt(ctx context.Context, s *chromedp.Target, x, y float64, button input.MouseButton, count int64, mods int64) error {
	if err := mouse(ctx, s, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: x, Y: y, Modifiers: mods}); err != nil {
		return err
	}
	buttons := map[input.MouseButton]int64{input.MouseButtonLeft: 1, input.MouseButtonRight: 2, input.MouseButtonMiddle: 4}[button]
	for i := int64(1); i <= count; i++ {
		p := input.DispatchMouseEventParams{X: x, Y: y, Button: button, ClickCount: i, Modifiers: mods}
		p.Type, p.Buttons = input.DispatchMouseEventTypeMousePressed, buttons
		if err := mouse(ctx, s, p); err != nil {
			return err
		}
		p.Type, p.Buttons = input.DispatchMouseEventTypeMouseReleased, 0
		if err := mouse(ctx, s, p); err != nil {
			return err
		}
	}
	return nil
}

// inView checks a point is inside the visible area.
func inView(ctx context.Context, s *chromedp.Target, x, y int64) error {
	w, h, err := viewport(ctx, s)
	if err != nil {
		return err
	}
	if float64(x) >= w || float64(y) >= h {
		return browser.NewBrowserError(fmt.Sprintf("(%d, %d) is outside the visible area (%.0f×%.0f CSS pixels)", x, y, w, h))
	}
	return nil
}

func modifiers(keys []browser.Modifier) int64 {
	var m int64
	for _, k := range keys {
		m |= modifierBits[string(k)]
	}
	return m
}

// ClickAt clicks at a point of the visible area.
func (b *Browser) ClickAt(ctx context.Context, args browser.ClickAtArgs) (*string, error) {
	return b.act(ctx, args.TabID, func(ctx context.Context, s *chromedp.Target, _ *tab) error {
		if err := inView(ctx, s, args.X, args.Y); err != nil {
			return err
		}
		return clickAt(ctx, s, float64(args.X), float64(args.Y), input.MouseButton(args.Button), args.ClickCount, modifiers(args.Keys))
	})
}

// HoverAt moves the pointer to a point of the visible area.
func (b *Browser) HoverAt(ctx context.Context, args browser.HoverAtArgs) (*string, error) {
	return b.act(ctx, args.TabID, func(ctx context.Context, s *chromedp.Target, _ *tab) error {
		if err := inView(ctx, s, args.X, args.Y); err != nil {
			return err
		}
		return mouse(ctx, s, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: float64(args.X), Y: float64(args.Y)})
	})
}

// RunScript evaluates the source in the page (awaiting a promise) and
// returns its value as text: a string as it is, anything else as JSON. The
// browser stops the script at the timeout.
func (b *Browser) RunScript(ctx context.Context, args browser.RunScriptArgs) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.tabFor(ctx, args.TabID)
	if err != nil {
		return "", err
	}
	timeout := time.Duration(args.TimeoutMS) * time.Millisecond
	// The page's own wait (a promise) is bounded here; a busy loop is
	// stopped by the browser's timeout.
	sctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
	defer cancel()
	b.refs.reset()
	start := time.Now()
	out, err := run(sctx, t, func(ctx context.Context, s *chromedp.Target) (string, error) {
		res, err := cdp.Call(ctx, s, runtime.Evaluate, runtime.EvaluateParams{Expression: args.Source, ReturnByValue: ptr(true),
			AwaitPromise: ptr(true), UserGesture: ptr(true), Timeout: runtime.TimeDelta(args.TimeoutMS)})
		if err != nil {
			return "", err
		}
		if res.ExceptionDetails != nil {
			msg := res.ExceptionDetails.Text
			if ex := res.ExceptionDetails.Exception; ex != nil && ex.Description != "" {
				msg = ex.Description
			}
			return "", browser.NewBrowserError("the script threw: " + msg)
		}
		if res.Result == nil || len(res.Result.Value) == 0 {
			return "", nil
		}
		var str string
		if json.Unmarshal(res.Result.Value, &str) == nil {
			return str, nil
		}
		return string(res.Result.Value), nil
	})
	// A script the browser terminated at its timeout ends in a protocol
	// error rather than an exception.
	if err != nil && ctx.Err() == nil && (errors.Is(sctx.Err(), context.DeadlineExceeded) || time.Since(start) >= timeout) {
		return "", b.report(ctx, browser.NewBrowserError(fmt.Sprintf("the script did not finish within %d ms", args.TimeoutMS)))
	}
	if err = b.report(ctx, err); err != nil {
		return "", err
	}
	return out, nil
}
