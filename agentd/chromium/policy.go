package chromium

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	chromebrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/agentd-dev/agentd/actions/browser"
)

// The load policy. A URL policy on the host sees only the URL of navigate
// and new_tab; a page reaches other origins by itself (a redirect, a meta
// refresh, a script setting location, a link, a form, a pop-up, an image
// or a fetch). So the allowed origins are enforced where the browser
// loads: browser-wide Fetch interception pauses every request of every
// target (tabs, pop-ups and frames the browser opens itself, workers),
// redirects included, before it is sent, and lets it go on only when its
// origin is allowed. Being browser-wide, it holds for a pop-up from its
// first request on, with no race against the pop-up's attachment.
//
// Not covered: WebSocket and WebRTC connections (Fetch does not see them)
// and the browser's own DNS lookups for a refused host.
//
// Downloads are always refused (Browser.setDownloadBehavior deny): the
// Chromium driver offers no download method.

// maxPending bounds the refusals kept for the next report.
const maxPending = 8

// loadPolicy is the allow-list in force and the refusals not yet reported.
type loadPolicy struct {
	mu      sync.Mutex
	allowed *browser.OriginSet // nil: no policy, every request goes on
	pending []string           // refusals since the last report, without repeats
}

// allows decides one request and records a refusal for the next report.
func (p *loadPolicy) allows(raw string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.allowed == nil {
		return true
	}
	u, err := url.Parse(raw)
	if err == nil {
		switch strings.ToLower(u.Scheme) {
		case "data", "blob", "about":
			// Made from what the page already has; nothing is sent.
			return true
		}
		if p.allowed.Allows(u) {
			return true
		}
	}
	where, err := browser.ReportedURL(raw)
	if err != nil || where == "" {
		where = "a URL that does not parse"
	}
	p.note("loading " + where + " (not an allowed origin)")
	return false
}

// note records a refusal for the next report. Callers hold mu.
func (p *loadPolicy) note(what string) {
	for _, have := range p.pending {
		if have == what {
			return
		}
	}
	if len(p.pending) < maxPending {
		p.pending = append(p.pending, what)
	}
}

// take returns the refusals not yet reported and forgets them.
func (p *loadPolicy) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.pending
	p.pending = nil
	return out
}

// startPolicy denies downloads and starts serving paused requests and
// download notices. It runs once, from Start; the goroutines end with the
// browser's context and Close waits for them.
func (b *Browser) startPolicy(ctx context.Context) error {
	s := b.browserSession()
	// Subscribed before anything can pause, so that no request waits for
	// an answer that never comes.
	paused := chromedp.BrowserEvents(b.browserCtx, fetch.RequestPaused)
	downloads := chromedp.BrowserEvents(b.browserCtx, chromebrowser.DownloadWillBegin)
	b.wg.Add(2)
	go func() {
		defer b.wg.Done()
		for ev, err := range paused {
			if err != nil {
				return
			}
			b.decide(s, ev)
		}
	}()
	go func() {
		defer b.wg.Done()
		for ev, err := range downloads {
			if err != nil {
				return
			}
			where, rerr := browser.ReportedURL(ev.URL)
			if rerr != nil || where == "" {
				where = "the page"
			}
			b.policy.mu.Lock()
			b.policy.note("a download from " + where + " (downloads are off)")
			b.policy.mu.Unlock()
		}
	}()
	if _, err := cdp.Call(ctx, s, chromebrowser.SetDownloadBehavior, chromebrowser.SetDownloadBehaviorParams{
		Behavior: chromebrowser.SetDownloadBehaviorBehaviorDeny, EventsEnabled: ptr(true)}); err != nil {
		return fmt.Errorf("deny downloads: %w", err)
	}
	return nil
}

// decide lets one paused request go on or fails it. A request whose tab
// has gone meanwhile cannot be answered; that error is nobody's to see.
func (b *Browser) decide(s cdp.Session, ev fetch.EventRequestPaused) {
	ctx := context.WithoutCancel(b.browserCtx)
	if ev.Request != nil && b.policy.allows(ev.Request.URL) {
		_, _ = cdp.Call(ctx, s, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		return
	}
	_, _ = cdp.Call(ctx, s, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
}

// SetAllowedOrigins limits every load of the browser to origins (see the
// load policy above); none lifts the limit. Refusals not yet reported are
// forgotten: they belong to the run before. What is already loaded stays.
func (b *Browser) SetAllowedOrigins(ctx context.Context, origins []string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var set *browser.OriginSet
	if len(origins) > 0 {
		s, err := browser.ParseOrigins(origins...)
		if err != nil {
			return fmt.Errorf("allowed origins: %w", err)
		}
		set = &s
	}
	b.policy.mu.Lock()
	b.policy.allowed, b.policy.pending = set, nil
	b.policy.mu.Unlock()
	if set == nil {
		if _, err := cdp.Call(ctx, b.browserSession(), fetch.Disable, cdp.Empty{}); err != nil {
			return fmt.Errorf("stop request interception: %w", err)
		}
		return nil
	}
	if _, err := cdp.Call(ctx, b.browserSession(), fetch.Enable, fetch.EnableParams{
		Patterns: []*fetch.RequestPattern{{URLPattern: "*", RequestStage: fetch.RequestStageRequest}}}); err != nil {
		return fmt.Errorf("start request interception: %w", err)
	}
	return nil
}

// report adds the refusals since the last report to a call's outcome, as
// a BrowserError the model reads: what the call did stands, and the model
// learns that the page tried to go elsewhere and was stopped. A failure
// that is not the model's to see keeps them for the next call.
func (b *Browser) report(ctx context.Context, err error) error {
	var be *browser.BrowserError
	if err != nil && (ctx.Err() != nil || !errors.As(err, &be)) {
		return err
	}
	refused := b.policy.take()
	if len(refused) == 0 {
		return err
	}
	msg := "the browser refused " + strings.Join(refused, "; ")
	if be != nil && !strings.Contains(be.Message, "ERR_BLOCKED_BY_CLIENT") {
		msg = be.Message + "; " + msg
	}
	return browser.NewBrowserError(msg)
}
