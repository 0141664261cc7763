package bench

import (
	"context"
	"fmt"
	"html"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/actions/browserrpc"
	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/tools/exercise/form"
)

// Browser figure IDs.
const (
	idBrowserReadForm  = "browser-read-form"
	idBrowserReadLarge = "browser-read-1000"
	idBrowserClick     = "browser-click"
	idBrowserShot      = "browser-screenshot"
	idComputerClickAck = "computer-click-ack"
	idComputerShot     = "computer-screenshot"
	// largeControls is how many controls the large page has.
	largeControls = 1000
)

// browserArgs are agentd's flags for the browser, or why it cannot be
// measured.
func browserArgs() (args []string, missing string) {
	if _, err := exec.LookPath("chromium"); err != nil {
		return nil, "not measured: needs Debian's chromium"
	}
	return browserrpc.LocalAgentdArgs(), ""
}

// largePage is a page of largeControls labelled controls: text fields,
// checkboxes, buttons and lists.
func largePage() string {
	var b strings.Builder
	b.WriteString("<!doctype html><html lang=en><head><meta charset=utf-8><title>Large form</title></head><body><form>")
	for i := range largeControls {
		label := html.EscapeString(fmt.Sprintf("Field %d", i))
		switch {
		case i%20 == 19:
			fmt.Fprintf(&b, `<label>%s <select name=s%d><option value=a>A</option><option value=b>B</option></select></label>`, label, i)
		case i%3 == 0:
			fmt.Fprintf(&b, `<label>%s <input name=t%d></label>`, label, i)
		case i%3 == 1:
			fmt.Fprintf(&b, `<label><input type=checkbox name=c%d> %s</label>`, i, label)
		default:
			fmt.Fprintf(&b, `<button type=button>%s</button>`, label)
		}
		if i%10 == 9 {
			b.WriteString("<br>")
		}
	}
	b.WriteString("</form></body></html>")
	return b.String()
}

// measureBrowser starts a local guest of its own whose agentd runs Chromium
// (the browser's window would take the bench desktop's input), and times,
// in the same rounds, the browser toolset's driver calls next to the
// computer tool doing the same on the same page: read_page of the pickup
// form and of a page of 1,000 controls, a click on a ref, a screenshot.
func measureBrowser(ctx context.Context, o Options, size Size) (figs []Figure, err error) {
	readForm := timeFigure(idBrowserReadForm, "read_page round trip, pickup form (5 controls)", nil)
	readLarge := timeFigure(idBrowserReadLarge, fmt.Sprintf("read_page round trip, %d controls", largeControls), nil)
	click := timeFigure(idBrowserClick, "click on a ref, request → done (the page handled it)", nil)
	shot := timeFigure(idBrowserShot, "browser screenshot, request → PNG of the page", nil)
	compClick := timeFigure(idComputerClickAck, "computer tool: click, request → ack (same page, same rounds)", nil)
	compShot := timeFigure(idComputerShot, "computer tool: screenshot end to end, native, still screen (same rounds)", nil)
	all := func() []Figure { return []Figure{readForm, readLarge, click, compClick, shot, compShot} }
	args, missing := browserArgs()
	if missing != "" {
		for _, f := range []*Figure{&readForm, &readLarge, &click, &shot, &compClick, &compShot} {
			f.Missing = missing
		}
		return all(), nil
	}
	o.progress("%v: browser: starting a local guest with agentd --browser", size)
	lb, err := backend.Get("local")
	if err != nil {
		return nil, err
	}
	g, err := lb.Up(ctx, backend.Spec{Width: size.W, Height: size.H, AgentdPath: o.AgentdPath, AgentdArgs: args})
	if err != nil {
		return nil, fmt.Errorf("browser guest: %w", err)
	}
	defer func() {
		if downErr := g.Down(context.Background()); downErr != nil && err == nil {
			err = downErr
		}
	}()
	c, err := backend.Dial(ctx, g)
	if err != nil {
		return nil, fmt.Errorf("browser guest: %w", err)
	}
	defer c.Close()
	d, err := c.Browser()
	if err != nil {
		return nil, err
	}
	pickup, err := form.NewRecordServer(filepath.Join(g.Describe().Home, "bench-records.jsonl"))
	if err != nil {
		return nil, err
	}
	defer pickup.Close()
	large, err := serveLargePage()
	if err != nil {
		return nil, err
	}
	defer large.close()

	o.progress("%v: browser: read_page, click, screenshot", size)
	if _, err := d.Navigate(ctx, browser.NavigateArgs{URL: pickup.URL()}); err != nil {
		return nil, err
	}
	r, err := d.ReadPage(ctx, browser.ReadPageArgs{Filter: browser.FilterAll})
	if err != nil {
		return nil, err
	}
	var fragile string
	for _, e := range r.Read.Elements {
		if e.Label == "Fragile" {
			fragile = e.Ref
		}
	}
	if fragile == "" {
		return nil, fmt.Errorf("browser: the form page has no Fragile checkbox")
	}
	timed := func(f func(context.Context) error) func(context.Context) (time.Duration, error) {
		return func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			err := f(ctx)
			return time.Since(start), err
		}
	}
	// A point on the form page's empty area: the computer click changes
	// nothing there.
	cx, cy := size.W*3/4, size.H*3/4
	res, err := runRounds(ctx, []contender{
		{id: idBrowserReadForm, run: timed(func(ctx context.Context) error {
			_, err := d.ReadPage(ctx, browser.ReadPageArgs{Filter: browser.FilterAll})
			return err
		})},
		{id: idBrowserClick, run: timed(func(ctx context.Context) error {
			_, err := d.Click(ctx, browser.ClickArgs{Target: fragile})
			return err
		})},
		{id: idComputerClickAck, run: timed(func(ctx context.Context) error {
			_, err := c.Click(ctx, cx, cy, actions.Left)
			return err
		})},
		{id: idBrowserShot, run: timed(func(ctx context.Context) error {
			_, err := d.Screenshot(ctx, browser.ScreenshotArgs{})
			return err
		})},
		{id: idComputerShot, run: timed(func(ctx context.Context) error {
			_, err := c.Screenshot(ctx)
			return err
		})},
	}, turns(o.Duration, 3))
	if err != nil {
		return nil, fmt.Errorf("browser: %w", err)
	}
	if _, err := d.Navigate(ctx, browser.NavigateArgs{URL: large.url}); err != nil {
		return nil, err
	}
	resLarge, err := runRounds(ctx, []contender{
		{id: idBrowserReadLarge, run: timed(func(ctx context.Context) error {
			r, err := d.ReadPage(ctx, browser.ReadPageArgs{Filter: browser.FilterAll})
			if err == nil && len(r.Read.Elements) != largeControls {
				err = fmt.Errorf("read_page found %d controls, want %d", len(r.Read.Elements), largeControls)
			}
			return err
		})},
	}, turns(o.Duration, 3))
	if err != nil {
		return nil, fmt.Errorf("browser: %w", err)
	}
	readForm = timeFigure(idBrowserReadForm, readForm.Name, res.samples[idBrowserReadForm])
	readLarge = timeFigure(idBrowserReadLarge, readLarge.Name, resLarge.samples[idBrowserReadLarge])
	click = timeFigure(idBrowserClick, click.Name, res.samples[idBrowserClick])
	shot = timeFigure(idBrowserShot, shot.Name, res.samples[idBrowserShot])
	compClick = timeFigure(idComputerClickAck, compClick.Name, res.samples[idComputerClickAck])
	compShot = timeFigure(idComputerShot, compShot.Name, res.samples[idComputerShot])
	if click.N > 0 && compClick.N > 0 {
		click.Note = fmt.Sprintf("%.1f× the computer click's p50", click.P50/compClick.P50)
	}
	if shot.N > 0 && compShot.N > 0 {
		shot.Note = fmt.Sprintf("%.1f× the computer screenshot's p50", shot.P50/compShot.P50)
	}
	return all(), nil
}

// pageServer serves one page on loopback.
type pageServer struct {
	url   string
	close func() error
}

func serveLargePage() (*pageServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	page := largePage()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &pageServer{url: "http://" + ln.Addr().String() + "/", close: srv.Close}, nil
}
