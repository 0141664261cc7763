package console

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/color"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/respserver"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/wire"
)

// Take over and hand back in a real browser, on a real agentd, with a
// scripted model through the real SDK: a page without the cookie cannot
// take over; the signed-in page takes the desktop as the model's click
// arrives, the click is refused (nothing on the desktop), typing with a
// non-ASCII character and a click in the page reach the desktop (X event
// recorder), the page hands back with a note, and the next request to the
// model carries a fresh screenshot and the appended note. The record's
// events say who did what, typed text by its length only.
func TestTakeOverInChromium(t *testing.T) {
	d := startDesktop(t)
	d.screenshot(t) // paints the desktop
	s := startConsole(t, Config{RunsDir: t.TempDir(), Guest: &Guest{Addr: d.addr, Token: d.token}})
	ctx := headless(t)
	base := "http://" + s.Addr()

	// Without the cookie: the page's own origin, no sign-in.
	run(t, ctx, chromedp.Navigate(base+"/"))
	run(t, ctx, chromedp.Evaluate[any](`(() => { const w = new WebSocket('ws://' + location.host + '/takeover');
		w.onopen = () => { window.__takeover = 'open'; }; w.onclose = () => { window.__takeover = window.__takeover || 'refused'; }; })()`))
	if got := run(t, ctx, chromedp.Poll[string](`window.__takeover`)); got != "refused" {
		t.Fatalf("a page without the cookie: the take over socket was %s", got)
	}
	if r, err := http.Get(base + "/takeover"); err != nil || r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/takeover without the cookie: %v %v", r, err)
	}

	run(t, ctx, chromedp.Navigate(s.URL()))
	run(t, ctx, chromedp.Poll[bool](`Number(document.querySelector('#live').dataset.frames) >= 1 && !document.querySelector('#take').disabled`,
		chromedp.WithPollingTimeout(20*time.Second)))

	model, modelURL := respserver.Start(respserver.Call(`{"type":"screenshot"}`),
		respserver.Call(`{"type":"click","button":"left","x":640,"y":400}`), respserver.Final("done"))
	defer model.Close()
	c, err := guest.Dial(context.Background(), d.addr, d.token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetView(wire.View{Width: 1280, Height: 800, Fit: true})
	ts := runner.New(openai.NewClient(option.WithBaseURL(modelURL), option.WithAPIKey("test")), c)
	defer ts.Close()
	atClick, taken, paused := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var events []runner.Event
	done := make(chan error, 1)
	runCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		_, err := ts.Run(runCtx, runner.RunOptions{Model: "test", Input: "click it", CallOptions: runner.CallOptions{
			OnEvent: func(e runner.Event) {
				events = append(events, e)
				switch {
				case e.Kind == runner.EventResponse && e.Step == 2:
					// The model's click has arrived: the person takes over now.
					close(atClick)
					<-taken
				case e.Kind == runner.EventTakeover && e.Takeover.Phase == runner.TakeoverPaused:
					close(paused)
				}
			}}})
		done <- err
	}()
	<-atClick
	run(t, ctx, chromedp.Click("#take"))
	run(t, ctx, chromedp.Poll[bool](`document.querySelector('#takeover').dataset.held === 'mine'`))
	close(taken)
	select {
	case <-paused:
	case err := <-done:
		t.Fatalf("the run ended instead of pausing: %v", err)
	}

	// The person types and clicks in the page.
	d.rec.Clear()
	run(t, ctx, chromedp.SendKeys("#live", "héllo"))
	d.rec.WaitTyped(t, "héllo", 20*time.Second)
	rect := run(t, ctx, chromedp.Evaluate[map[string]float64](`(() => { const r = document.querySelector('#live').getBoundingClientRect();
		return {x: r.left, y: r.top, w: r.width}; })()`))
	scale := rect["w"] / 1280
	run(t, ctx, chromedp.MouseClickXY(rect["x"]+200*scale, rect["y"]+100*scale))
	press := d.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonPress }, 20*time.Second)
	if press.X < 223 || press.X > 227 || press.Y < 110 || press.Y > 114 {
		t.Fatalf("the page's click at (200,100) of the 1280×800 view pressed at (%d,%d), want about (225,112) on the 1440×900 screen", press.X, press.Y)
	}
	// What the model will see after the hand back.
	d.rec.Fill(t, 0, 0, 300, 300, color.RGBA{R: 250, G: 0, B: 200, A: 255})
	d.rec.Sync(t)
	run(t, ctx, chromedp.SendKeys("#note", "I signed in for you"))
	run(t, ctx, chromedp.Click("#handback"))
	if err := <-done; err != nil {
		t.Fatalf("the run after the hand back: %v", err)
	}
	if err := model.Err(); err != nil {
		t.Fatal(err)
	}
	d.rec.Sync(t)
	for _, e := range d.rec.Events() {
		if e.Kind == xrecorder.ButtonPress && e.X == 720 && e.Y == 450 {
			t.Fatalf("the model's refused click reached the desktop: %v", e)
		}
	}

	reqs := model.Requests()
	body := string(reqs[len(reqs)-1].Body)
	for _, want := range []string{"A person took over the desktop", "did not run: 1. click left (640,400)", "I signed in for you"} {
		if !strings.Contains(body, want) {
			t.Errorf("the request after the hand back lacks %q", want)
		}
	}
	_, rest, _ := strings.Cut(body, "data:image/png;base64,")
	b64, _, _ := strings.Cut(rest, `"`)
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if r, g, b, _ := img.At(50, 50).RGBA(); r>>8 < 240 || g>>8 > 10 || b>>8 < 190 {
		t.Fatalf("the screenshot after the hand back is not fresh: pixel (50,50) is %v", img.At(50, 50))
	}

	var back *runner.TakeoverEvent
	for _, e := range events {
		if e.Kind == runner.EventTakeover && e.Takeover.Phase == runner.TakeoverHandedBack {
			back = e.Takeover
		}
	}
	if back == nil || len(back.By) != 1 || back.By[0] != takeoverBy || len(back.NotRun) != 1 {
		t.Fatalf("hand back event %+v", back)
	}
	all, _ := json.Marshal(events)
	if strings.Contains(string(all), "héllo") || !strings.Contains(string(all), "type 5 chars") {
		t.Fatalf("the person's typing is not redacted in the events: %s", back.Actions)
	}
}
