package chromium

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/agentd-dev/agentd/actions/browser"
)

// resolve returns a JavaScript handle of a DOM node; release it.
func resolve(ctx context.Context, s *chromedp.Target, node cdp.BackendNodeID) (runtime.RemoteObjectID, error) {
	res, err := cdp.Call(ctx, s, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: node})
	if err != nil || res.Object == nil || res.Object.ObjectID == "" {
		return "", browser.NewBrowserError("the control is gone from the page: read the page again")
	}
	return res.Object.ObjectID, nil
}

func releaseObject(ctx context.Context, s *chromedp.Target, obj runtime.RemoteObjectID) {
	_, _ = cdp.Call(context.WithoutCancel(ctx), s, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: obj})
}

func backendID(ctx context.Context, s *chromedp.Target, obj runtime.RemoteObjectID) (cdp.BackendNodeID, error) {
	res, err := cdp.Call(ctx, s, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: obj})
	if err != nil || res.Node == nil {
		return 0, fmt.Errorf("describe node: %w", err)
	}
	return res.Node.BackendNodeID, nil
}

// callOn calls a function with this = obj and decodes its JSON result.
func callOn(ctx context.Context, s *chromedp.Target, obj runtime.RemoteObjectID, fn string, out any, args ...any) error {
	var cargs []*runtime.CallArgument
	for _, a := range args {
		v, err := json.Marshal(a)
		if err != nil {
			return err
		}
		cargs = append(cargs, &runtime.CallArgument{Value: v})
	}
	res, err := cdp.Call(ctx, s, runtime.CallFunctionOn, runtime.CallFunctionOnParams{FunctionDeclaration: fn, ObjectID: obj,
		Arguments: cargs, ReturnByValue: ptr(true), AwaitPromise: ptr(true)})
	if err != nil {
		return fmt.Errorf("call function: %w", err)
	}
	if res.ExceptionDetails != nil {
		return fmt.Errorf("call function: the page's script threw: %s", res.ExceptionDetails.Text)
	}
	if out == nil || res.Result == nil || len(res.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(res.Result.Value, out)
}

// checkTargetJS says why an element cannot be acted on, or "".
const checkTargetJS = `function() {
  if (!this.isConnected) return "the control is gone from the page: read the page again";
  if (this.disabled || this.getAttribute("aria-disabled") === "true") return "the control is disabled";
  return "";
}`

// target looks a ref up in the tab's current document and returns a handle
// of its element, still in the page and enabled. Any doubt is a
// BrowserError: nothing is acted on. Callers hold mu.
func (b *Browser) target(ctx context.Context, s *chromedp.Target, t *tab, ref string) (refEntry, runtime.RemoteObjectID, error) {
	loader, err := loaderID(ctx, s)
	if err != nil {
		return refEntry{}, "", err
	}
	e, err := b.refs.lookup(t, loader, ref)
	if err != nil {
		return refEntry{}, "", err
	}
	obj, err := resolve(ctx, s, e.node)
	if err != nil {
		return refEntry{}, "", err
	}
	var why string
	if err := callOn(ctx, s, obj, checkTargetJS, &why); err != nil {
		releaseObject(ctx, s, obj)
		return refEntry{}, "", err
	}
	if why != "" {
		releaseObject(ctx, s, obj)
		return refEntry{}, "", browser.NewBrowserError(fmt.Sprintf("ref %q: %s", ref, why))
	}
	return e, obj, nil
}

// hitPointJS scrolls the element into view and returns the centre of its
// first box that the element itself (or its label) receives, or why not.
const hitPointJS = `function() {
  this.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
  const owns = (e) => e && (e === this || this.contains(e) || (this.labels && Array.from(this.labels).some(l => l === e || l.contains(e))));
  for (const r of this.getClientRects()) {
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    if (r.width < 1 || r.height < 1 || x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) continue;
    if (owns(document.elementFromPoint(x, y))) return {x, y, why: ""};
  }
  return {x: 0, y: 0, why: this.getClientRects().length ? "the control is covered by another element" : "the control is not displayed"};
}`

// point scrolls a target into view and returns where a pointer reaches it.
func point(ctx context.Context, s *chromedp.Target, obj runtime.RemoteObjectID, ref string) (float64, float64, error) {
	var p struct {
		X, Y float64
		Why  string
	}
	if err := callOn(ctx, s, obj, hitPointJS, &p); err != nil {
		return 0, 0, err
	}
	if p.Why != "" {
		return 0, 0, browser.NewBrowserError(fmt.Sprintf("ref %q: %s", ref, p.Why))
	}
	return p.X, p.Y, nil
}

// settleTimeout bounds the wait for the task after an action.
const settleTimeout = 2 * time.Second

// act runs an action on a tab and then waits for a navigation it started
// (a submitted form, a followed link) to load, so that the state and the
// next read see the new page.
func (b *Browser) act(ctx context.Context, tabID *string, f func(ctx context.Context, s *chromedp.Target, t *tab) error) (*string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.tabFor(ctx, tabID)
	if err != nil {
		return nil, err
	}
	_, err = run(ctx, t, func(ctx context.Context, s *chromedp.Target) (chromedp.Void, error) {
		requested, stopReq := s.Subscribe("Page.frameRequestedNavigation")
		defer stopReq()
		started, stopStart := s.Subscribe("Page.frameStartedLoading")
		defer stopStart()
		loaded, stopLoad := s.Subscribe("Page.loadEventFired")
		defer stopLoad()
		stopped, stopStopped := s.Subscribe("Page.frameStoppedLoading")
		defer stopStopped()
		if err := toFront(ctx, s); err != nil {
			return chromedp.Void{}, err
		}
		if err := f(ctx, s, t); err != nil {
			return chromedp.Void{}, err
		}
		// A task later, a navigation the action caused has been requested.
		// Not a frame later: a tab behind another (its pop-up in front)
		// renders no frames, and the wait would last until the call's
		// deadline. A page too busy to run the task is not waited for.
		settle, cancel := context.WithTimeout(ctx, settleTimeout)
		var ignored bool
		_ = evalValue(settle, s, `new Promise(r => setTimeout(() => r(true), 0))`, &ignored)
		cancel()
		select {
		case <-requested:
		case <-started:
		default:
			return chromedp.Void{}, nil
		}
		b.refs.reset()
		wait := time.NewTimer(navigationTimeout)
		defer wait.Stop()
		// The main frame stopping without a load is a navigation that
		// ended in no document: a download, or a load that was cancelled.
		for {
			select {
			case <-loaded:
				return chromedp.Void{}, nil
			case raw := <-stopped:
				var ev struct {
					FrameID string `json:"frameId"`
				}
				if json.Unmarshal(raw, &ev) == nil && ev.FrameID == string(t.target) {
					return chromedp.Void{}, nil
				}
			case <-wait.C:
				return chromedp.Void{}, browser.NewBrowserError(fmt.Sprintf("the action started a navigation that did not finish loading within %s", navigationTimeout))
			case <-ctx.Done():
				return chromedp.Void{}, ctx.Err()
			}
		}
	})
	return nil, b.report(ctx, err)
}

// toFront shows the tab in its window. A tab behind another (a pop-up
// opened in front of it) renders no frames, and the input events and
// screenshots that wait for one would wait until the call's deadline.
func toFront(ctx context.Context, s *chromedp.Target) error {
	if _, err := cdp.Call(ctx, s, page.BringToFront, cdp.Empty{}); err != nil {
		return fmt.Errorf("bring the tab to the front: %w", err)
	}
	return nil
}

// onTarget is act on the element of a ref.
func (b *Browser) onTarget(ctx context.Context, tabID *string, ref string, f func(ctx context.Context, s *chromedp.Target, obj runtime.RemoteObjectID, e refEntry) error) (*string, error) {
	return b.act(ctx, tabID, func(ctx context.Context, s *chromedp.Target, t *tab) error {
		e, obj, err := b.target(ctx, s, t, ref)
		if err != nil {
			return err
		}
		defer releaseObject(ctx, s, obj)
		return f(ctx, s, obj, e)
	})
}

func mouse(ctx context.Context, s *chromedp.Target, p input.DispatchMouseEventParams) error {
	if _, err := cdp.Call(ctx, s, input.DispatchMouseEvent, p); err != nil {
		return fmt.Errorf("mouse event: %w", err)
	}
	return nil
}

// Click clicks the centre of the ref's element with the left button, after
// checking the element itself is what a pointer there reaches.
func (b *Browser) Click(ctx context.Context, args browser.ClickArgs) (*string, error) {
	return b.onTarget(ctx, args.TabID, args.Target, func(ctx context.Context, s *chromedp.Target, obj runtime.RemoteObjectID, _ refEntry) error {
		x, y, err := point(ctx, s, obj, args.Target)
		if err != nil {
			return err
		}
		if err := mouse(ctx, s, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: x, Y: y}); err != nil {
			return err
		}
		if err := mouse(ctx, s, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMousePressed, X: x, Y: y, Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1}); err != nil {
			return err
		}
		return mouse(ctx, s, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseReleased, X: x, Y: y, Button: input.MouseButtonLeft, ClickCount: 1})
	})
}

// Hover moves the pointer over the ref's element.
func (b *Browser) Hover(ctx context.Context, args browser.HoverArgs) (*string, error) {
	return b.onTarget(ctx, args.TabID, args.Target, func(ctx context.Context, s *chromedp.Target, obj runtime.RemoteObjectID, _ refEntry) error {
		x, y, err := point(ctx, s, obj, args.Target)
		if err != nil {
			return err
		}
		return mouse(ctx, s, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: x, Y: y})
	})
}

// focusJS focuses the element and puts the caret at the end of its text.
const focusJS = `function() {
  this.focus({preventScroll: false});
  if (document.activeElement !== this && !this.contains(document.activeElement)) return "the control cannot take the keyboard focus";
  if (typeof this.setSelectionRange === "function" && typeof this.value === "string") {
    try { this.setSelectionRange(this.value.length, this.value.length); } catch (e) {}
  }
  return "";
}`

// Type inserts text into the ref's element (focused first), or into the
// focused control when there is no target.
func (b *Browser) Type(ctx context.Context, args browser.TypeArgs) (*string, error) {
	insert := func(ctx context.Context, s *chromedp.Target) error {
		if _, err := cdp.Call(ctx, s, input.InsertText, input.InsertTextParams{Text: args.Text}); err != nil {
			return fmt.Errorf("insert text: %w", err)
		}
		return nil
	}
	if args.Target == nil {
		return b.act(ctx, args.TabID, func(ctx context.Context, s *chromedp.Target, _ *tab) error { return insert(ctx, s) })
	}
	return b.onTarget(ctx, args.TabID, *args.Target, func(ctx context.Context, s *chromedp.Target, obj runtime.RemoteObjectID, _ refEntry) error {
		var why string
		if err := callOn(ctx, s, obj, focusJS, &why); err != nil {
			return err
		}
		if why != "" {
			return browser.NewBrowserError(fmt.Sprintf("ref %q: %s", *args.Target, why))
		}
		return insert(ctx, s)
	})
}

// selectJS selects exactly the options with the given values and fires the
// events a user's choice fires.
const selectJS = `function(values) {
  if (!(this instanceof HTMLSelectElement)) return "the control is not a list of options";
  const options = Array.from(this.options);
  for (const v of values) if (!options.some(o => o.value === v && !o.disabled)) return "no enabled option has the value " + JSON.stringify(v);
  if (!this.multiple && values.length !== 1) return "this list takes exactly one value";
  for (const o of options) o.selected = values.includes(o.value);
  this.dispatchEvent(new Event("input", {bubbles: true}));
  this.dispatchEvent(new Event("change", {bubbles: true}));
  return "";
}`

// SelectOption selects the options of a <select> by value.
func (b *Browser) SelectOption(ctx context.Context, args browser.SelectOptionArgs) (*string, error) {
	return b.onTarget(ctx, args.TabID, args.Target, func(ctx context.Context, s *chromedp.Target, obj runtime.RemoteObjectID, _ refEntry) error {
		var why string
		if err := callOn(ctx, s, obj, selectJS, &why, args.Values); err != nil {
			return err
		}
		if why != "" {
			return browser.NewBrowserError(fmt.Sprintf("ref %q: %s", args.Target, why))
		}
		return nil
	})
}

// ScrollTo scrolls the ref's element into view.
func (b *Browser) ScrollTo(ctx context.Context, args browser.ScrollToArgs) (*string, error) {
	return b.onTarget(ctx, args.TabID, args.Target, func(ctx context.Context, s *chromedp.Target, obj runtime.RemoteObjectID, e refEntry) error {
		if _, err := cdp.Call(ctx, s, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: e.node}); err != nil {
			return browser.NewBrowserError(fmt.Sprintf("ref %q cannot be scrolled into view", args.Target))
		}
		return nil
	})
}

// viewport is the visible area of the page in CSS pixels.
func viewport(ctx context.Context, s *chromedp.Target) (w, h float64, err error) {
	m, err := cdp.Call(ctx, s, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return 0, 0, fmt.Errorf("layout metrics: %w", err)
	}
	if m.CSSVisualViewport == nil {
		return 0, 0, fmt.Errorf("layout metrics: no visual viewport")
	}
	return m.CSSVisualViewport.ClientWidth, m.CSSVisualViewport.ClientHeight, nil
}

// Scroll turns the wheel over the middle of the page by amount CSS pixels.
func (b *Browser) Scroll(ctx context.Context, args browser.ScrollArgs) (*string, error) {
	return b.act(ctx, args.TabID, func(ctx context.Context, s *chromedp.Target, _ *tab) error {
		w, h, err := viewport(ctx, s)
		if err != nil {
			return err
		}
		amount := float64(min(args.Amount, 1<<20))
		var dx, dy float64
		switch args.Direction {
		case browser.DirectionUp:
			dy = -amount
		case browser.DirectionDown:
			dy = amount
		case browser.DirectionLeft:
			dx = -amount
		case browser.DirectionRight:
			dx = amount
		}
		if amount == 0 {
			return nil
		}
		// Both deltas, the zero one too: the browser requires them, and
		// cdproto's params leave a zero out.
		p := map[string]any{"type": input.DispatchMouseEventTypeMouseWheel, "x": math.Floor(w / 2), "y": math.Floor(h / 2), "deltaX": dx, "deltaY": dy}
		if err := s.Call(ctx, input.CommandDispatchMouseEvent, p, nil); err != nil {
			return fmt.Errorf("mouse event: %w", err)
		}
		return nil
	})
}

// waitPoll is how often wait_for looks at the page.
const waitPoll = 50 * time.Millisecond

// WaitFor waits until the page's visible text, white space collapsed,
// contains args.Text.
func (b *Browser) WaitFor(ctx context.Context, args browser.WaitForArgs) (*string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.tabFor(ctx, args.TabID)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Duration(args.TimeoutMS) * time.Millisecond)
	_, err = run(ctx, t, func(ctx context.Context, s *chromedp.Target) (chromedp.Void, error) {
		for {
			var text string
			if err := evalValue(ctx, s, visibleTextJS, &text); err != nil {
				return chromedp.Void{}, err
			}
			if strings.Contains(strings.Join(strings.Fields(text), " "), args.Text) {
				return chromedp.Void{}, nil
			}
			if time.Now().After(deadline) {
				return chromedp.Void{}, browser.NewBrowserError(fmt.Sprintf("the text did not appear within %d ms", args.TimeoutMS))
			}
			select {
			case <-time.After(waitPoll):
			case <-ctx.Done():
				return chromedp.Void{}, ctx.Err()
			}
		}
	})
	return nil, b.report(ctx, err)
}
