package console

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/desktoptest"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/randhex"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// headless starts Debian's chromium, headless, with its sandbox kept: as
// root it runs as nobody (Chromium refuses root with the sandbox on), with a
// profile directory of its own.
func headless(t *testing.T) context.Context {
	t.Helper()
	prereq.Programs(t, prereq.X, "chromium")
	profile, err := os.MkdirTemp("", "console-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(profile) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		if err := os.Chown(profile, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	var out agentdtest.SyncBuffer
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath("chromium"),
		chromedp.UserDataDir(profile),
		chromedp.Headless,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		// Stated, so chromedp never adds --no-sandbox for a root test.
		chromedp.Flag("no-sandbox", false),
		chromedp.Flag("remote-debugging-pipe", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("force-device-scale-factor", "1"),
		chromedp.WindowSize(1400, 1000),
		chromedp.NoInheritEnv,
		chromedp.Env("HOME="+profile, "PATH=/usr/bin:/bin", "LANG=C.UTF-8"),
		chromedp.CombinedOutput(&out),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred}
		}),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		if t.Failed() {
			t.Logf("chromium output:\n%s", out.String())
		}
	})
	// The first action starts the browser, which lives as long as that
	// action's context: ctx itself, bounded from outside.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start chromium: %v\n%s", err, out.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("chromium did not start within a minute\n%s", out.String())
	}
	return ctx
}

// desktop is a real agentd (the binary) on a private Xvfb, with an event
// recorder window covering the screen.
type desktop struct {
	rec   *xrecorder.Recorder
	addr  string
	token string
	pid   int
}

func startDesktop(t *testing.T) *desktop {
	t.Helper()
	token := randhex.String(32)
	d := desktoptest.Start(t, agentdtest.Binary(t), 1440, 900, token, 20*time.Second)
	return &desktop{rec: d.Rec, addr: d.Addr, token: token, pid: d.Pid}
}

// screenshot paints a few boxes on the desktop and returns agentd's
// screenshot of it, fitted into 1280×800 as a model sees it.
func (d *desktop) screenshot(t *testing.T) []byte {
	t.Helper()
	d.rec.Fill(t, 0, 0, 1440, 900, color.RGBA{R: 236, G: 239, B: 244, A: 255})
	d.rec.Fill(t, 120, 90, 1200, 60, color.RGBA{R: 29, G: 35, B: 48, A: 255})
	d.rec.Fill(t, 620, 380, 400, 60, color.RGBA{R: 255, G: 255, B: 255, A: 255})
	d.rec.Fill(t, 100, 100, 240, 140, color.RGBA{R: 90, G: 140, B: 220, A: 255})
	d.rec.Fill(t, 620, 600, 200, 56, color.RGBA{R: 10, G: 122, B: 61, A: 255})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := guest.Dial(ctx, d.addr, d.token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetView(wire.View{Width: 1280, Height: 800, Fit: true})
	shot, err := c.Screenshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return shot.PNG
}

// scripted is a run of d's desktop by a model scripted with turns, seeing
// the 1280×800 view; model, client and runner close when the test ends.
func (d *desktop) scripted(t *testing.T, turns ...respserver.Turn) (*respserver.Server, *runner.Toolset) {
	t.Helper()
	model, modelURL := respserver.Start(turns...)
	t.Cleanup(model.Close)
	c, err := guest.Dial(context.Background(), d.addr, d.token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetView(wire.View{Width: 1280, Height: 800, Fit: true})
	ts := runner.New(openai.NewClient(option.WithBaseURL(modelURL), option.WithAPIKey("test")), c)
	t.Cleanup(func() { ts.Close() })
	return model, ts
}

// presses are the button presses on the desktop so far, once the events
// sent before are in.
func (d *desktop) presses(t *testing.T) []xrecorder.Event {
	t.Helper()
	d.rec.Sync(t)
	var presses []xrecorder.Event
	for _, e := range d.rec.Events() {
		if e.Kind == xrecorder.ButtonPress {
			presses = append(presses, e)
		}
	}
	return presses
}

// cpu is the CPU time agentd has used so far.
func (d *desktop) cpu(t *testing.T) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// The console in a real browser: refused without the one-time URL, signed
// in with it, refused on its second use; the live view's frame changes when
// the desktop does (read in the page's canvas); a run's steps with their
// marks, the approval, and replay step by step. It measures the live view's
// latency (a change on the screen → the changed frame painted, in the
// page's clock) and agentd's CPU with the page watching a still and a
// changing screen.
func TestConsoleInChromium(t *testing.T) {
	d := startDesktop(t)
	runs := t.TempDir()
	const runName = "20260101-120000-abc123"
	writeRunShots(t, runs, runName, d.screenshot(t), d.screenshot(t))
	s := startConsole(t, Config{RunsDir: runs, Guest: &Guest{Addr: d.addr, Token: d.token}, CurrentRun: runName})
	ctx := headless(t)
	base := s.Base()

	resp := run(t, ctx, chromedp.NavigateResponse(base+"/"))
	if resp.Status != 401 {
		t.Fatalf("the page without the one-time URL: HTTP %d", resp.Status)
	}
	resp = run(t, ctx, chromedp.NavigateResponse(s.URL()))
	if resp.Status != 200 || !strings.HasSuffix(resp.URL, "/") {
		t.Fatalf("the one-time URL: HTTP %d at %s", resp.Status, resp.URL)
	}
	if c := run(t, ctx, chromedp.Evaluate[string]("document.cookie")); c != "" {
		t.Fatalf("the page's script can read the cookie: %q", c)
	}
	// Polled only once the page's document is there: a poll started while
	// the sign-in's redirect still swaps the page's script context fails
	// with "Cannot find context with specified id".
	run(t, ctx, chromedp.WaitReady("#live"))
	run(t, ctx, chromedp.Poll[bool](`Number(document.querySelector('#live').dataset.frames) >= 1`, chromedp.WithPollingTimeout(20*time.Second)))
	if resp := run(t, ctx, chromedp.NavigateResponse(s.URL())); resp.Status != 403 {
		t.Fatalf("the one-time URL a second time: HTTP %d", resp.Status)
	}
	run(t, ctx, chromedp.Navigate(base+"/"))
	// As above: the canvas is polled only once the new document is there.
	run(t, ctx, chromedp.WaitReady("#live"))

	// The live view: each change of the screen reaches the canvas.
	colors := []color.RGBA{{R: 230, G: 30, B: 30, A: 255}, {R: 30, G: 200, B: 60, A: 255}, {R: 40, G: 60, B: 230, A: 255}}
	pixelIs := func(c color.RGBA) string {
		return fmt.Sprintf(`(() => { const p = document.querySelector('#live').getContext('2d').getImageData(60, 60, 1, 1).data;
			return Math.abs(p[0]-%d) < 8 && Math.abs(p[1]-%d) < 8 && Math.abs(p[2]-%d) < 8 ? Number(document.querySelector('#live').dataset.drawnAt) : 0; })()`, c.R, c.G, c.B)
	}
	var latencies []float64
	for i := range 15 {
		c := colors[i%len(colors)]
		time.Sleep(150 * time.Millisecond) // let the screen be still, as between actions
		start := float64(time.Now().UnixMicro()) / 1000
		d.rec.Fill(t, 0, 0, 300, 300, c)
		painted := run(t, ctx, chromedp.Poll[float64](pixelIs(c), chromedp.WithPollingTimeout(10*time.Second)))
		latencies = append(latencies, painted-start)
	}
	t.Logf("live view: a screen change → the changed frame drawn in the page's canvas: median %.1f ms over %d (min %.1f, max %.1f)",
		median(latencies), len(latencies), slices.Min(latencies), slices.Max(latencies))

	// agentd's CPU with one watcher (this page): a still screen costs the
	// frame hash only; a screen changing 20 times a second is capped at
	// the watch rate.
	window := func(change bool) float64 {
		stop := time.Now().Add(2 * time.Second)
		before := d.cpu(t)
		began := time.Now()
		for i := 0; time.Now().Before(stop); i++ {
			if change {
				d.rec.Fill(t, 400, 0, 300, 300, colors[i%len(colors)])
			}
			time.Sleep(50 * time.Millisecond)
		}
		return float64(d.cpu(t)-before) / float64(time.Since(began)) * 100
	}
	var still, changing []float64
	for range 3 {
		still = append(still, window(false))
		changing = append(changing, window(true))
	}
	t.Logf("agentd CPU with one watcher: still screen median %.1f%% of a core, changing screen (20 changes/s) median %.1f%% (3 windows of 2 s each)",
		median(still), median(changing))

	// The run page: the steps, the marks drawn on the screenshot the model
	// saw, the approval and its answer, and replay.
	run(t, ctx, chromedp.Navigate(base+"/#/runs/"+runName))
	run(t, ctx, chromedp.Poll[bool](`document.querySelectorAll('li.step').length === 3 && document.querySelector('li.step[data-step="2"] img').complete`))
	got := run(t, ctx, chromedp.Evaluate[map[string]any](`(() => {
		const s = document.querySelector('li.step[data-step="2"]');
		return {
			img: s.querySelector('img').getAttribute('src'),
			loaded: s.querySelector('img').naturalWidth,
			clicks: s.querySelectorAll('g.mark-click').length,
			drags: s.querySelectorAll('g.mark-drag').length,
			scrolls: s.querySelectorAll('g.mark-scroll').length,
			scrollArrow: ['x1', 'y1', 'x2', 'y2'].map(k => s.querySelector('g.mark-scroll line').getAttribute(k)).join(','),
			scrollHead: s.querySelectorAll('g.mark-scroll polygon').length,
			clickButton: s.querySelector('g.mark-click .mark-button').textContent,
			dragPoints: s.querySelector('g.mark-drag polyline').getAttribute('points'),
			// On the path's second segment, far from a straight first→last line.
			dragThrough: s.querySelector('g.mark-drag polyline').isPointInStroke(new DOMPoint(410, 210)),
			dragStraight: s.querySelector('g.mark-drag polyline').isPointInStroke(new DOMPoint(200, 150)),
			labels: [...s.querySelectorAll('.mark-label')].map(e => e.textContent),
			approval: s.querySelector('.approval').textContent,
			final: document.querySelector('#run-end .final').textContent,
		};
	})()`))
	want := map[string]any{"img": "api/runs/" + runName + "/step-001.png", "loaded": 1280.0, "clicks": 1.0, "drags": 1.0, "scrolls": 1.0,
		"scrollArrow": "640,400,640,448", "scrollHead": 1.0, "clickButton": "left",
		"dragPoints": "100,100 400,120 420,300 200,320 300,200", "dragThrough": true, "dragStraight": false,
		"labels": []any{"3. type 12 chars"}, "final": "The form is submitted."}
	for k, v := range want {
		if fmt.Sprint(got[k]) != fmt.Sprint(v) {
			t.Errorf("step 2 %s = %v, want %v", k, got[k], v)
		}
	}
	if a, _ := got["approval"].(string); !strings.Contains(a, "malicious_instructions") || !strings.Contains(a, "approved on the terminal") || !strings.Contains(a, "by the console") {
		t.Errorf("approval shown as %q", a)
	}
	run(t, ctx, chromedp.Click("#next"))
	run(t, ctx, chromedp.Click("#next"))
	if pos := run(t, ctx, chromedp.Evaluate[string](`document.querySelector('#replay-pos').textContent + ' ' +
		[...document.querySelectorAll('li.step')].map(e => e.dataset.step).join(',')`)); pos != "step 2 of 3 2" {
		t.Errorf("replay shows %q, want step 2 alone", pos)
	}
	// AGENTD_CONSOLE_SCREENSHOT=docs/images/console.png keeps the page as
	// the README shows it.
	if file := os.Getenv("AGENTD_CONSOLE_SCREENSHOT"); file != "" {
		run(t, ctx, chromedp.Poll[bool](`document.querySelector('li.step img').complete`))
		png := run(t, ctx, chromedp.CaptureScreenshot())
		if err := os.WriteFile(file, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Approvals in the page: "Approve" approves, "Deny" refuses, and a page
// that goes away answers nothing — the question waits until its context
// ends. An answer must come from the page's own origin.
func TestConsoleApprovalsInChromium(t *testing.T) {
	s := startConsole(t, Config{RunsDir: t.TempDir()})
	ctx := headless(t)
	run(t, ctx, chromedp.Navigate(s.URL()))
	ask := func(askCtx context.Context) chan error {
		res := make(chan error, 1)
		go func() {
			ok, err := s.Ask(askCtx, Question{Kind: "safety_checks", CallID: "call_7", Actions: []string{"click left (10,20)"}, Checks: []string{"malicious_instructions: check"}})
			if err == nil && !ok {
				err = errors.New("refused")
			}
			res <- err
		}()
		return res
	}
	for _, c := range []struct {
		button string
		want   string
	}{{"approve", "<nil>"}, {"deny", "refused"}} {
		res := ask(context.Background())
		run(t, ctx, chromedp.Poll[bool](`document.querySelector('li.question button.`+c.button+`') !== null`))
		if text := run(t, ctx, chromedp.Text("li.question")); !strings.Contains(text, "click left (10,20)") || !strings.Contains(text, "malicious_instructions") {
			t.Fatalf("the question shows %q", text)
		}
		run(t, ctx, chromedp.Click("li.question button."+c.button))
		if err := <-res; fmt.Sprint(err) != c.want {
			t.Fatalf("%s: Ask returned %v", c.button, err)
		}
		run(t, ctx, chromedp.Poll[bool](`document.querySelector('#questions').hidden`))
	}

	// The page goes away: nothing answers; the question is withdrawn
	// when its context ends.
	askCtx, cancel := context.WithCancel(context.Background())
	res := ask(askCtx)
	run(t, ctx, chromedp.Poll[bool](`document.querySelector('li.question') !== null`))
	run(t, ctx, chromedp.Navigate("about:blank"))
	select {
	case err := <-res:
		t.Fatalf("answered without the page: %v", err)
	case <-time.After(time.Second):
	}
	var id string
	for range 50 {
		if qs := s.pendingIDs(); len(qs) == 1 {
			id = qs[0]
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	c := client(t)
	c.Jar.SetCookies(&url.URL{Scheme: "http", Host: s.Addr()}, []*http.Cookie{{Name: cookieName, Value: s.auth.cookie}})
	for _, origin := range []string{"", "http://attacker.example"} {
		req, _ := http.NewRequest(http.MethodPost, s.Base()+"/api/questions/"+id, strings.NewReader("approve"))
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if r, err := c.Do(req); err != nil || r.StatusCode != http.StatusForbidden {
			t.Fatalf("an answer with Origin %q: %v %v", origin, r, err)
		}
	}
	cancel()
	if err := <-res; !errors.Is(err, ErrNotAnswered) {
		t.Fatalf("a withdrawn question: %v", err)
	}
	req, _ := http.NewRequest(http.MethodPost, s.Base()+"/api/questions/"+id, strings.NewReader("approve"))
	req.Header.Set("Origin", "http://"+s.Addr())
	if r, err := c.Do(req); err != nil || r.StatusCode != http.StatusConflict {
		t.Fatalf("an answer to a withdrawn question: %v %v", r, err)
	}
}

// A scripted run whose click carries a pending safety check, answered in
// the page: Approve lets the click reach the desktop (X event recorder);
// Deny stops the run with nothing executed.
func TestConsoleApprovesARealRun(t *testing.T) {
	d := startDesktop(t)
	s := startConsole(t, Config{RunsDir: t.TempDir()})
	ctx := headless(t)
	run(t, ctx, chromedp.Navigate(s.URL()))

	for _, button := range []string{"approve", "deny"} {
		t.Run(button, func(t *testing.T) {
			d.rec.Clear()
			turn := respserver.Call(`{"type":"click","button":"left","x":640,"y":400}`)
			turn.SafetyChecks = []respserver.SafetyCheck{{ID: "sc_1", Code: "malicious_instructions", Message: "check"}}
			_, ts := d.scripted(t, respserver.Call(`{"type":"screenshot"}`), turn, respserver.Turn{Message: "done"})
			runCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
			done := make(chan error, 1)
			go func() {
				_, err := ts.Run(runCtx, runner.RunOptions{Model: "test", Input: "click it"}, runner.CallOptions{ApproveSafetyChecks: func(ctx context.Context, call runner.CallInfo, checks []runner.SafetyCheck) (any, error) {
					return s.Ask(ctx, Question{Kind: runner.ApprovalSafetyChecks, CallID: call.CallID, Actions: []string{call.Actions[0].String()}})
				},
				})
				done <- err
			}()
			run(t, ctx, chromedp.Poll[bool](`document.querySelector('li.question button.`+button+`') !== null`, chromedp.WithPollingTimeout(30*time.Second)))
			run(t, ctx, chromedp.Click("li.question button."+button))
			err := <-done
			run(t, ctx, chromedp.Poll[bool](`document.querySelector('li.question') === null`))
			cancel()
			clicks := d.presses(t)
			switch button {
			case "approve":
				if err != nil {
					t.Fatalf("approved run: %v", err)
				}
				if len(clicks) != 1 || clicks[0].X != 720 || clicks[0].Y != 450 {
					t.Fatalf("approved click reached the desktop as %v, want one press at (720,450)", clicks)
				}
			case "deny":
				var refusal *runner.ApprovalError
				if !errors.As(err, &refusal) {
					t.Fatalf("denied run ended with %v, want an approval refusal", err)
				}
				if len(clicks) != 0 {
					t.Fatalf("a denied call reached the desktop: %v", clicks)
				}
			}
		})
	}
}

// before_action questions in the page, in a scripted run on a real
// desktop: each question shows the call's actions drawn on the screenshot
// the model saw, the asked one marked. "Approve" lets the click reach the
// desktop (X event recorder); "Deny" stops the run with nothing executed.
func TestConsoleBeforeActionInChromium(t *testing.T) {
	d := startDesktop(t)
	ctx := headless(t)
	for _, button := range []string{"approve", "deny"} {
		t.Run(button, func(t *testing.T) {
			runName := "20260101-120000-" + button
			runs, rec := createRun(t, runName)
			s := startConsole(t, Config{RunsDir: runs, CurrentRun: runName})
			run(t, ctx, chromedp.Navigate(s.URL()))
			d.rec.Clear()
			_, ts := d.scripted(t, respserver.Call(`{"type":"screenshot"}`),
				respserver.Call(`{"type":"click","button":"right","x":640,"y":400}`), respserver.Turn{Message: "done"})
			runCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			done := make(chan error, 1)
			ap := Approvals{Server: s}
			go func() {
				_, err := ts.Run(runCtx, runner.RunOptions{Model: "test", Input: "click it", OnEvent: rec.Event}, runner.CallOptions{BeforeAction: ap.BeforeAction})
				done <- err
			}()
			// Answer each question as it comes: the click's with the button
			// under test, the screenshots with Approve.
			var clickQuestion map[string]any
			var runErr error
			seen := map[string]bool{}
		answering:
			for {
				select {
				case runErr = <-done:
					break answering
				default:
				}
				q := run(t, ctx, chromedp.Evaluate[map[string]any](`(() => {
					const q = document.querySelector('li.question');
					if (!q || q.querySelector('button').disabled) return {};
					const img = q.querySelector('.shot img');
					return { id: q.dataset.id, text: q.textContent, img: img ? img.getAttribute('src') : '',
						asked: [...q.querySelectorAll('g.asked')].map(g => g.getAttribute('class')).join(' '),
						button: (q.querySelector('g.asked .mark-button') || {}).textContent || '' };
				})()`))
				id, _ := q["id"].(string)
				if id == "" || seen[id] {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				seen[id] = true
				answer := "approve"
				if text, _ := q["text"].(string); strings.Contains(text, "action 1: click right (640,400)") {
					clickQuestion, answer = q, button
				}
				run(t, ctx, chromedp.Click(`li.question[data-id="`+id+`"] button.`+answer))
			}
			cancel()
			rec.Finish(nil, runErr)
			if clickQuestion == nil {
				t.Fatalf("%s: the click was never asked about in the page (run: %v)", button, runErr)
			}
			if clickQuestion["img"] != "api/runs/"+runName+"/step-001.png" || clickQuestion["asked"] != "mark-click asked" || clickQuestion["button"] != "right" {
				t.Errorf("%s: the click's question shows %v, want step-001.png with the right click marked", button, clickQuestion)
			}
			presses := d.presses(t)
			switch button {
			case "approve":
				if runErr != nil {
					t.Fatalf("approved run: %v", runErr)
				}
				if len(presses) != 1 || presses[0].X != 720 || presses[0].Y != 450 || presses[0].Button != 3 {
					t.Fatalf("approved click reached the desktop as %+v, want one right press at (720,450)", presses)
				}
			case "deny":
				var refusal *runner.ApprovalError
				if !errors.As(runErr, &refusal) || refusal.Kind != runner.ApprovalBeforeAction {
					t.Fatalf("denied run ended with %v, want a before_action refusal", runErr)
				}
				if len(presses) != 0 {
					t.Fatalf("a denied action reached the desktop: %+v", presses)
				}
			}
		})
	}
}

// Asked in the page and on the terminal: the terminal answering first
// takes the question out of the page, which says it was answered there;
// the page answering first withdraws the terminal's prompt.
func TestConsoleTerminalAndPageInChromium(t *testing.T) {
	s := startConsole(t, Config{RunsDir: t.TempDir()})
	ctx := headless(t)
	run(t, ctx, chromedp.Navigate(s.URL()))

	shown := make(chan struct{})
	res := make(chan Answer, 1)
	go func() {
		a, _ := s.AskBoth(context.Background(), Question{Kind: runner.ApprovalBeforeAction, CallID: "call_9", Index: 0, Summary: "click left (1,2)"},
			func(ctx context.Context) (bool, error) {
				select {
				case <-shown:
					return true, nil
				case <-ctx.Done():
					return false, ctx.Err()
				}
			})
		res <- a
	}()
	run(t, ctx, chromedp.Poll[bool](`document.querySelector('li.question button.approve') !== null`))
	close(shown)
	if a := <-res; a != (Answer{Approved: true, By: ByTerminal}) {
		t.Fatalf("got %+v", a)
	}
	run(t, ctx, chromedp.Poll[bool](`document.querySelector('li.question') === null && document.querySelector('#questions').hidden`))
	if log := run(t, ctx, chromedp.Text("#question-log")); !strings.Contains(log, "call_9: approved in the terminal") {
		t.Fatalf("the page says %q", log)
	}

	withdrawn := make(chan error, 1)
	go func() {
		a, _ := s.AskBoth(context.Background(), Question{Kind: runner.ApprovalBeforeAction, CallID: "call_10", Index: 0},
			func(ctx context.Context) (bool, error) { <-ctx.Done(); withdrawn <- ctx.Err(); return false, ctx.Err() })
		res <- a
	}()
	run(t, ctx, chromedp.Poll[bool](`document.querySelector('li.question button.deny') !== null`))
	run(t, ctx, chromedp.Click("li.question button.deny"))
	if a := <-res; a != (Answer{Approved: false, By: ByPage}) {
		t.Fatalf("got %+v", a)
	}
	if err := <-withdrawn; !errors.Is(err, context.Canceled) {
		t.Fatalf("the terminal's prompt ended with %v", err)
	}
}
