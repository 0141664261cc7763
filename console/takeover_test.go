package console

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image/color"
	"image/png"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/tools/respserver"
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
	base := s.Base()

	// Without the cookie: the page's own origin, no sign-in.
	run(t, ctx, chromedp.Navigate(base+"/"))
	run(t, ctx, chromedp.Evaluate[any](`(() => { const w = new WebSocket(new URL('takeover', location.href).href.replace(/^http/, 'ws'));
		w.onopen = () => { window.__takeover = 'open'; }; w.onclose = () => { window.__takeover = window.__takeover || 'refused'; }; })()`))
	if got := run(t, ctx, chromedp.Poll[string](`window.__takeover`)); got != "refused" {
		t.Fatalf("a page without the cookie: the take over socket was %s", got)
	}
	if r, err := http.Get(base + "/takeover"); err != nil || r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/takeover without the cookie: %v %v", r, err)
	}

	run(t, ctx, chromedp.Navigate(s.URL()))
	// Polled once the page after the sign-in's redirect is there: a poll
	// racing the document swap fails with "Cannot find context with
	// specified id".
	run(t, ctx, chromedp.WaitReady("#live"))
	run(t, ctx, chromedp.Poll[bool](`Number(document.querySelector('#live').dataset.frames) >= 1 && !document.querySelector('#take').disabled`,
		chromedp.WithPollingTimeout(20*time.Second)))

	model, ts := d.scripted(t, respserver.Call(`{"type":"screenshot"}`),
		respserver.Call(`{"type":"click","button":"left","x":640,"y":400}`), respserver.Final("done"))
	atClick, taken, paused := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var events []runner.Event
	done := make(chan error, 1)
	runCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		_, err := ts.Run(runCtx, runner.RunOptions{Model: "test", Input: "click it", OnEvent: func(e runner.Event) {
			events = append(events, e)
			switch {
			case e.Kind == runner.EventResponse && e.Step == 2:
				// The model's click has arrived: the person takes over now.
				close(atClick)
				<-taken
			case e.Kind == runner.EventTakeover && e.Takeover.Phase == runner.TakeoverPaused:
				close(paused)
			}
		}}, runner.CallOptions{})
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
	d.rec.Fill(t, 0, 0, 300, 300, handBackPaint)
	d.rec.Sync(t)
	run(t, ctx, chromedp.SendKeys("#note", "I signed in for you"))
	run(t, ctx, chromedp.Click("#handback"))
	if err := <-done; err != nil {
		t.Fatalf("the run after the hand back: %v", err)
	}
	if err := model.Err(); err != nil {
		t.Fatal(err)
	}
	for _, e := range d.presses(t) {
		if e.X == 720 && e.Y == 450 {
			t.Fatalf("the model's refused click reached the desktop: %v", e)
		}
	}

	lastRequestAfterHandBack(t, model, handBackPaint, "did not run: 1. click left (640,400)", "I signed in for you")

	back := handedBack(events)
	if back == nil || len(back.By) != 1 || back.By[0] != takeoverBy || len(back.NotRun) != 1 {
		t.Fatalf("hand back event %+v", back)
	}
	all, _ := json.Marshal(events)
	if strings.Contains(string(all), "héllo") || !strings.Contains(string(all), "type 5 chars") {
		t.Fatalf("the person's typing is not redacted in the events: %s", back.Actions)
	}
}

// A hand back made while the run waits at a --confirm question (issue 26):
// a real agentd on Xvfb, a scripted model through the real SDK, the
// console's own approvals. The person takes the desktop over through the
// operator role (as the console does) while the question about the
// model's click is open: the question is withdrawn at once and says why,
// an answer to it is refused and runs nothing; the person clicks and
// types and hands back with a note; the model's click never reaches the
// desktop, the next request carries a fresh screenshot and the note, and
// the record holds the take over.
func TestHandBackAtAQuestion(t *testing.T) {
	d := startDesktop(t)
	d.screenshot(t)
	runName := "20260101-120000-question"
	runs, rec := createRun(t, runName)
	s := startConsole(t, Config{RunsDir: runs, CurrentRun: runName, Guest: &Guest{Addr: d.addr, Token: d.token}})
	model, ts := d.scripted(t, respserver.Call(`{"type":"screenshot"}`),
		respserver.Call(`{"type":"click","button":"left","x":640,"y":400}`), respserver.Final("done"))
	var (
		mu     sync.Mutex
		events []runner.Event
	)
	runCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := ts.Run(runCtx, runner.RunOptions{Model: "test", Input: "click it", OnEvent: func(e runner.Event) {
			rec.Event(e)
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}}, runner.CallOptions{BeforeAction: Approvals{Server: s}.BeforeAction})
		done <- err
	}()

	// Approve the first call's screenshot; stop at the question about the click.
	var click Question
	deadline := time.Now().Add(time.Minute)
	for click.ID == "" {
		if time.Now().After(deadline) {
			t.Fatal("the click was never asked about")
		}
		s.questions.mu.Lock()
		var q *question
		if len(s.questions.pending) == 1 {
			q = s.questions.pending[0]
		}
		s.questions.mu.Unlock()
		switch {
		case q == nil:
			time.Sleep(10 * time.Millisecond)
		case strings.Contains(q.Summary, "click"):
			click = q.Question
		default:
			if w := answerInPage(s, q.ID, "approve"); w.Code != http.StatusNoContent {
				t.Fatalf("approving %s: %d %s", q.Summary, w.Code, w.Body)
			}
		}
	}

	op, opCtx := d.operate(t)
	if err := op.Take(opCtx, takeoverBy); err != nil {
		t.Fatal(err)
	}
	// The question is withdrawn while the person holds the desktop, and
	// the page is told why.
	var st *Settled
	for st == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the question about the click is still asked after the take over (pending %v)", s.pendingIDs())
		}
		st = s.settledAs(click.ID)
		if st == nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if !st.Withdrawn || !strings.Contains(st.Why, "took over the desktop") {
		t.Fatalf("the question ended as %+v, want withdrawn because of the take over", st)
	}
	if w := answerInPage(s, click.ID, "approve"); w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "took over the desktop") {
		t.Fatalf("approving the withdrawn question: %d %s", w.Code, w.Body)
	}

	d.rec.Clear()
	if _, err := op.Input(opCtx, actions.Action{Type: actions.Click, Button: actions.Left, X: 200, Y: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Input(opCtx, actions.Action{Type: actions.TypeText, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	d.rec.WaitTyped(t, "hi", 20*time.Second)
	d.rec.Fill(t, 0, 0, 300, 300, handBackPaint)
	d.rec.Sync(t)
	if err := op.HandBack(opCtx, "NOTE-4182 I closed the dialog"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the run after the hand back: %v", err)
	}
	if err := model.Err(); err != nil {
		t.Fatal(err)
	}
	presses := d.presses(t)
	if len(presses) != 1 || presses[0].X != 200 || presses[0].Y != 100 {
		t.Fatalf("presses on the desktop %+v, want the person's one at (200,100) and never the model's at (720,450)", presses)
	}

	lastRequestAfterHandBack(t, model, handBackPaint, "did not run: 1. click left (640,400)", "NOTE-4182 I closed the dialog")

	if err := rec.Finish(nil, nil); err != nil {
		t.Fatal(err)
	}
	if tks := recordedTakeovers(t, runs, runName); len(tks) != 1 || !tks[0].HandedBack || len(tks[0].NotRun) != 1 ||
		!slices.Equal(tks[0].Notes, []string{"NOTE-4182 I closed the dialog"}) || !slices.Equal(tks[0].By, []string{takeoverBy}) {
		t.Fatalf("the record's take overs: %+v", tks)
	}
}

// The page of a run that ends (issue 26): while the person holds the
// desktop the page says which of the model's actions was stopped; when the
// run ends the page says so, with the final message, before the console
// closes, and then stops: no more requests (polls, live view, take over),
// counted in the browser.
func TestPageAfterTheRunEnds(t *testing.T) {
	d := startDesktop(t)
	d.screenshot(t)
	runName := "20260101-120000-ends"
	runs, rec := createRun(t, runName)
	s, err := Start(Config{RunsDir: runs, CurrentRun: runName, Guest: &Guest{Addr: d.addr, Token: d.token}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	t.Cleanup(func() {
		select {
		case <-closed:
		default:
			s.Close()
		}
	})
	ctx := headless(t)
	run(t, ctx, chromedp.Navigate(s.URL()))
	var requests atomic.Int64
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev.(type) {
		case *network.EventRequestWillBeSent, *network.EventWebSocketCreated:
			requests.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, chromedp.Poll[bool](`Number(document.querySelector('#live').dataset.frames) >= 1 && !document.querySelector('#take').disabled`,
		chromedp.WithPollingTimeout(20*time.Second)))

	_, ts := d.scripted(t, respserver.Call(`{"type":"screenshot"}`),
		respserver.Call(`{"type":"click","button":"left","x":640,"y":400}`), respserver.Final("all done, FINAL-5521"))
	atClick, taken := make(chan struct{}), make(chan struct{})
	type result struct {
		res *runner.RunResult
		err error
	}
	done := make(chan result, 1)
	runCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		res, err := ts.Run(runCtx, runner.RunOptions{Model: "test", Input: "click it", OnEvent: func(e runner.Event) {
			rec.Event(e)
			if e.Kind == runner.EventResponse && e.Step == 2 {
				close(atClick)
				<-taken
			}
		}}, runner.CallOptions{})
		done <- result{res, err}
	}()
	<-atClick
	run(t, ctx, chromedp.Click("#take"))
	run(t, ctx, chromedp.Poll[bool](`document.querySelector('#takeover').dataset.held === 'mine'`))
	close(taken)
	stopped := run(t, ctx, chromedp.Poll[string](`(() => { const t = document.querySelector('#takeover-stopped').textContent;
		return t.includes('did not run') ? t : false; })()`, chromedp.WithPollingTimeout(30*time.Second)))
	if !strings.Contains(stopped, "click left (640,400)") {
		t.Fatalf("while the person holds the desktop the page says %q, want the model's stopped click", stopped)
	}
	run(t, ctx, chromedp.Click("#handback"))
	r := <-done
	if r.err != nil {
		t.Fatalf("the run: %v", r.err)
	}
	if err := rec.Finish(r.res, nil); err != nil {
		t.Fatal(err)
	}
	s.End(Outcome{Status: RunDone, Message: r.res.FinalMessage})
	go func() { closed <- s.Close() }()
	run(t, ctx, chromedp.Poll[bool](`document.body.dataset.ended === 'done'`, chromedp.WithPollingTimeout(30*time.Second)))
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
	closed <- nil
	page := run(t, ctx, chromedp.Evaluate[map[string]string](`({
		title: document.querySelector('#ended-title').textContent,
		text: document.querySelector('#ended-text').textContent,
		questions: String(document.querySelector('#questions').hidden),
		outcome: (document.querySelector('tr[data-run] td:last-child') || {}).textContent || '' })`))
	if page["title"] != "The run finished: done" || !strings.Contains(page["text"], "FINAL-5521") || page["questions"] != "true" {
		t.Fatalf("the page after the run ended: %v", page)
	}
	// The sockets end with the console; the page says so and stops.
	status := run(t, ctx, chromedp.Poll[string](`(() => { const a = document.querySelector('#live-status').textContent,
		b = document.querySelector('#takeover-state').textContent;
		return a.includes('run has ended') && b.includes('run has ended') ? a + ' / ' + b : false; })()`,
		chromedp.WithPollingTimeout(30*time.Second)))
	if strings.Contains(status, "trying again") {
		t.Fatalf("the page retries after the end: %s", status)
	}
	if page := run(t, ctx, chromedp.Poll[string](`(() => { const o = (document.querySelector('tr[data-run] td:last-child') || {}).textContent; return o === 'done' ? o : false; })()`,
		chromedp.WithPollingTimeout(30*time.Second))); page != "done" {
		t.Fatalf("the runs list says %q", page)
	}
	before := requests.Load()
	// Longer than every retry period of the page (2 s) several times over.
	time.Sleep(8 * time.Second)
	if after := requests.Load(); after != before {
		t.Fatalf("the page made %d requests after the run ended and the console closed", after-before)
	}
}

// A take over and hand back while the model is thinking (issue 26): the
// model's next call was chosen from a screenshot the person made out of
// date, so it does not run; it is answered with a fresh screenshot and the
// person's note, and the record has the take over.
func TestHandBackWhileTheModelThinks(t *testing.T) {
	d := startDesktop(t)
	d.screenshot(t)
	model, ts := d.scripted(t, respserver.Call(`{"type":"screenshot"}`),
		respserver.Call(`{"type":"click","button":"left","x":640,"y":400}`), respserver.Final("done"))
	op, opCtx := d.operate(t)
	var events []runner.Event
	var personErr error
	runCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := ts.Run(runCtx, runner.RunOptions{Model: "test", Input: "click it", OnEvent: func(e runner.Event) {
		events = append(events, e)
		if e.Kind != runner.EventResponse || e.Step != 2 {
			return
		}
		// The model's click has arrived but not run: a person takes
		// the desktop, acts and hands it back before it does.
		personErr = errors.Join(op.Take(opCtx, takeoverBy),
			func() error {
				_, err := op.Input(opCtx, actions.Action{Type: actions.Click, Button: actions.Left, X: 200, Y: 100})
				return err
			}())
		d.rec.Fill(t, 0, 0, 300, 300, handBackPaint)
		d.rec.Sync(t)
		personErr = errors.Join(personErr, op.HandBack(opCtx, "NOTE-7319 moved the window"))
	}}, runner.CallOptions{})
	if personErr != nil {
		t.Fatal(personErr)
	}
	if err != nil {
		t.Fatalf("the run: %v", err)
	}
	for _, e := range d.presses(t) {
		if e.X == 720 && e.Y == 450 {
			t.Fatalf("the model's click, chosen before the take over, reached the desktop: %v", e)
		}
	}
	lastRequestAfterHandBack(t, model, handBackPaint, "did not run: 1. click left (640,400)", "NOTE-7319 moved the window")
	back := handedBack(events)
	if back == nil || back.Leases != 1 || !slices.Equal(back.Notes, []string{"NOTE-7319 moved the window"}) || len(back.NotRun) != 1 {
		t.Fatalf("hand back event %+v", back)
	}
}

// A take over while the model writes its final message (issue 26): the run
// does not end on a message written from a screenshot the person made out
// of date. It waits for the hand back, records the take over, and sends the
// model a fresh screenshot and the person's note; the model's next answer
// ends the run. Whether the person has handed back when the final message
// arrives or still holds the desktop, the hand back reaches the model and
// the record.
func TestHandBackBeforeTheFinalMessage(t *testing.T) {
	d := startDesktop(t)
	d.screenshot(t)
	for _, held := range []bool{false, true} {
		// Each case paints its own colour, so a screenshot from before
		// it cannot pass for a fresh one.
		name, paint := "handed back before the final message", handBackPaint
		if held {
			name, paint = "held when the final message arrives", color.RGBA{R: 0, G: 200, B: 250, A: 255}
		}
		t.Run(name, func(t *testing.T) {
			runName := "20260101-120000-final"
			runs, rec := createRun(t, runName)
			model, ts := d.scripted(t, respserver.Call(`{"type":"screenshot"}`),
				respserver.Final("done"), respserver.Final("done, after the note"))
			op, opCtx := d.operate(t)
			note := "NOTE-5521 I saved the file for you"
			act := func() error {
				_, err := op.Input(opCtx, actions.Action{Type: actions.Click, Button: actions.Left, X: 200, Y: 100})
				d.rec.Fill(t, 0, 0, 300, 300, paint)
				d.rec.Sync(t)
				return err
			}
			var events []runner.Event
			var personErr error
			runCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := ts.Run(runCtx, runner.RunOptions{Model: "test", Input: "look", OnEvent: func(e runner.Event) {
				rec.Event(e)
				events = append(events, e)
				switch {
				case e.Kind == runner.EventRequest && e.Step == 2:
					// The model is writing its final message: a person
					// takes the desktop and acts.
					personErr = errors.Join(op.Take(opCtx, takeoverBy), act())
					if !held {
						personErr = errors.Join(personErr, op.HandBack(opCtx, note))
					}
				case held && e.Kind == runner.EventTakeover && e.Takeover.Phase == runner.TakeoverPaused:
					personErr = errors.Join(personErr, op.HandBack(opCtx, note))
				}
			}}, runner.CallOptions{})
			if personErr != nil {
				t.Fatal(personErr)
			}
			if err != nil {
				t.Fatalf("the run: %v", err)
			}
			if res.FinalMessage != "done, after the note" {
				t.Fatalf("the run ended with %q, a final message written before the person's take over", res.FinalMessage)
			}
			if n := len(model.Requests()); n != 3 {
				t.Fatalf("the model got %d requests, want 3", n)
			}
			lastRequestAfterHandBack(t, model, paint, "They performed 1 action(s)", note)
			if err := rec.Finish(res, nil); err != nil {
				t.Fatal(err)
			}
			if tks := recordedTakeovers(t, runs, runName); len(tks) != 1 || !tks[0].HandedBack || !slices.Equal(tks[0].Notes, []string{note}) ||
				!slices.Equal(tks[0].By, []string{takeoverBy}) || len(tks[0].Actions) != 1 {
				t.Fatalf("the record's take overs: %+v", tks)
			}
		})
	}
}

// handBackPaint is what a person paints on the desktop before handing
// back, for the screenshot the model gets next to show.
var handBackPaint = color.RGBA{R: 250, G: 0, B: 200, A: 255}

// operate connects to d's agentd in the operator role, as the console
// does for a person who takes over; the context bounds its calls.
func (d *desktop) operate(t *testing.T) (*guest.Operator, context.Context) {
	t.Helper()
	op, err := guest.Operate(context.Background(), d.addr, d.token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { op.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return op, ctx
}

// lastRequestAfterHandBack checks the model's last request: it tells of
// the take over with each of wants, and its screenshot is fresh, showing
// paint at (50,50).
func lastRequestAfterHandBack(t *testing.T, model *respserver.Server, paint color.RGBA, wants ...string) {
	t.Helper()
	reqs := model.Requests()
	body := string(reqs[len(reqs)-1].Body)
	for _, want := range append([]string{"A person took over the desktop"}, wants...) {
		if !strings.Contains(body, want) {
			t.Errorf("the request after the hand back lacks %q:\n%.800s", want, body)
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
	if got := color.RGBAModel.Convert(img.At(50, 50)).(color.RGBA); got != paint {
		t.Fatalf("the screenshot after the hand back is not fresh: pixel (50,50) is %v, want %v", got, paint)
	}
}

// handedBack is the last hand back among events, nil if there is none.
func handedBack(events []runner.Event) *runner.TakeoverEvent {
	var back *runner.TakeoverEvent
	for _, e := range events {
		if e.Kind == runner.EventTakeover && e.Takeover.Phase == runner.TakeoverHandedBack {
			back = e.Takeover
		}
	}
	return back
}

// recordedTakeovers are the take overs in the record of run runName, in
// order.
func recordedTakeovers(t *testing.T, runs, runName string) []Takeover {
	t.Helper()
	run, err := readRun(filepath.Join(runs, runName), runName)
	if err != nil {
		t.Fatal(err)
	}
	var tks []Takeover
	for _, step := range run.StepList {
		tks = append(tks, step.Takeovers...)
	}
	return tks
}
