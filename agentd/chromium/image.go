package chromium

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentd-dev/agentd/actions/browser"
)

// capture takes a PNG of the visible area, or of clip within it.
func (b *Browser) capture(ctx context.Context, tabID *string, region *[4]int64) (browser.Image, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.tabFor(ctx, tabID)
	if err != nil {
		return browser.Image{}, err
	}
	img, err := run(ctx, t, func(ctx context.Context, s *chromedp.Target) (browser.Image, error) {
		if err := toFront(ctx, s); err != nil {
			return browser.Image{}, err
		}
		p := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, OptimizeForSpeed: ptr(true)}
		if region != nil {
			w, h, err := viewport(ctx, s)
			if err != nil {
				return browser.Image{}, err
			}
			l, tp, r, bt := region[0], region[1], region[2], region[3]
			if float64(r) > w || float64(bt) > h {
				return browser.Image{}, browser.NewBrowserError(fmt.Sprintf("the region [%d, %d, %d, %d] is outside the visible area (%.0f×%.0f CSS pixels)", l, tp, r, bt, w, h))
			}
			p.Clip = &page.Viewport{X: float64(l), Y: float64(tp), Width: float64(r - l), Height: float64(bt - tp), Scale: 1}
		}
		res, err := cdp.Call(ctx, s, page.CaptureScreenshot, p)
		if err != nil {
			return browser.Image{}, fmt.Errorf("capture screenshot: %w", err)
		}
		url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(res.Data)
		detail := browser.DetailOriginal
		return browser.Image{ImageURL: &url, Detail: &detail}, nil
	})
	if err = b.report(ctx, err); err != nil {
		return browser.Image{}, err
	}
	return img, nil
}

// Screenshot captures the visible area of the page.
func (b *Browser) Screenshot(ctx context.Context, args browser.ScreenshotArgs) (browser.Image, error) {
	return b.capture(ctx, args.TabID, nil)
}

// Zoom captures a region of the visible area, in CSS pixels.
func (b *Browser) Zoom(ctx context.Context, args browser.ZoomArgs) (browser.Image, error) {
	return b.capture(ctx, args.TabID, &args.Region)
}
