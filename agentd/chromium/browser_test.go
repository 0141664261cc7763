package chromium

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/internal/browsertest"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
	"github.com/agentd-dev/agentd/tools/exercise"
	"github.com/agentd-dev/agentd/tools/exercise/form"
)

// start runs a Chromium on a private Xvfb for one test. As root, the
// browser runs as nobody: Chromium refuses root with its sandbox on.
func start(t *testing.T) (*Browser, context.Context) {
	t.Helper()
	prereq.Programs(t, prereq.X, "chromium")
	x := xvfbtest.Start(t, 1440, 900)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	var out strings.Builder
	cfg := Config{Display: x.Display, Width: 1440, Height: 900, Output: &out}
	if os.Geteuid() == 0 {
		cfg.User = &Account{UID: 65534, GID: 65534}
	}
	b, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("%v\nbrowser output:\n%s", err, out.String())
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return b, ctx
}

// openForm serves the pickup form, opens it and reads it.
func openForm(t *testing.T, b *Browser, ctx context.Context, filter browser.Filter) (*form.RecordServer, browser.ReadResult) {
	t.Helper()
	srv := browsertest.FormServer(t)
	must(t)(b.Navigate(ctx, browser.NavigateArgs{URL: srv.URL()}))
	return srv, readPage(t, b, ctx, filter)
}

func readPage(t *testing.T, b *Browser, ctx context.Context, filter browser.Filter) browser.ReadResult {
	t.Helper()
	r, err := b.ReadPage(ctx, browser.ReadPageArgs{Filter: filter})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// refOf finds the ref of the element labelled label.
func refOf(t *testing.T, r browser.ReadResult, label string) string {
	t.Helper()
	if r.Read == nil {
		t.Fatal("no structured read")
	}
	for _, e := range r.Read.Elements {
		if e.Label == label {
			return e.Ref
		}
	}
	t.Fatalf("no element labelled %q in %+v", label, r.Read.Elements)
	return ""
}

// must fails the test on a method's error: must(t)(b.Click(...)).
func must(t *testing.T) func(*string, error) {
	return func(_ *string, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// The form is filled through refs of the accessibility tree, and the
// server's record is exactly what was typed and chosen.
func TestFillFormThroughRefs(t *testing.T) {
	b, ctx := start(t)
	srv, r := openForm(t, b, ctx, browser.FilterInteractive)
	roles := map[string]browser.Role{}
	for _, e := range r.Read.Elements {
		roles[e.Label] = e.Role
	}
	for label, role := range map[string]browser.Role{"Name": browser.RoleTextbox, "Date (YYYY-MM-DD)": browser.RoleTextbox,
		"Pickup slot": browser.RoleListbox, "Fragile": browser.RoleCheckbox, "Submit": browser.RoleButton} {
		if roles[label] != role {
			t.Errorf("%s: role %q, want %q", label, roles[label], role)
		}
	}
	name := refOf(t, r, "Name")
	must(t)(b.Type(ctx, browser.TypeArgs{Text: exercise.PickupName, Target: &name}))
	date := refOf(t, r, "Date (YYYY-MM-DD)")
	must(t)(b.Type(ctx, browser.TypeArgs{Text: "2025-03-14", Target: &date}))
	must(t)(b.SelectOption(ctx, browser.SelectOptionArgs{Target: refOf(t, r, "Pickup slot"), Values: []string{"Afternoon"}}))
	must(t)(b.Click(ctx, browser.ClickArgs{Target: refOf(t, r, "Fragile")}))

	again := readPage(t, b, ctx, browser.FilterAll)
	if refOf(t, again, "Name") != name {
		t.Errorf("the same control got a new ref within one document")
	}
	for _, e := range again.Read.Elements {
		switch e.Label {
		case "Name":
			if e.Value == nil || *e.Value != exercise.PickupName {
				t.Errorf("name value %v", e.Value)
			}
		case "Fragile":
			if e.Checked == nil || !*e.Checked {
				t.Errorf("fragile not checked")
			}
		}
	}
	must(t)(b.Click(ctx, browser.ClickArgs{Target: refOf(t, r, "Submit")}))

	recs, err := srv.Records()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	got := recs[0]
	if got.Name != exercise.PickupName || got.Date != "2025-03-14" || got.Slot != "Afternoon" || !got.Fragile {
		t.Errorf("record %+v", got)
	}
	st, err := b.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tabs) != 1 || st.Tabs[0].Title != "Saved" || !st.Tabs[0].Active {
		t.Errorf("state after submit: %+v", st)
	}
}

// A ref read before a navigation is refused afterwards, and nothing is
// clicked: no record, the form still there.
func TestStaleRefAfterNavigation(t *testing.T) {
	b, ctx := start(t)
	srv, r := openForm(t, b, ctx, browser.FilterAll)
	name := refOf(t, r, "Name")
	submit := refOf(t, r, "Submit")
	must(t)(b.Type(ctx, browser.TypeArgs{Text: "Ann", Target: &name}))
	must(t)(b.Navigate(ctx, browser.NavigateArgs{URL: srv.URL()}))

	_, err := b.Click(ctx, browser.ClickArgs{Target: submit})
	var be *browser.BrowserError
	if !errors.As(err, &be) || !strings.Contains(be.Message, "stale") {
		t.Fatalf("click on a stale ref: %v, want a BrowserError saying stale", err)
	}
	if recs, err := srv.Records(); err != nil || len(recs) != 0 {
		t.Errorf("records %v (%v), want none", recs, err)
	}
	st, err := b.State(ctx)
	if err != nil || st.Tabs[0].Title != "Pickup request" {
		t.Errorf("state %+v (%v), want the form still shown", st, err)
	}
	// The new document's refs work.
	r = readPage(t, b, ctx, browser.FilterAll)
	if refOf(t, r, "Submit") == submit {
		t.Errorf("a new document reused ref %q", submit)
	}
}

// Chromium keeps its sandbox: no --no-sandbox, and its renderers run in a
// user namespace of their own.
func TestSandboxKept(t *testing.T) {
	b, _ := start(t)
	pid := b.pid()
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(string(cmdline), "\x00")
	for _, a := range args {
		if a == "--no-sandbox" {
			t.Fatalf("the browser runs with --no-sandbox: %q", args)
		}
	}
	own, err := os.Readlink("/proc/self/ns/user")
	if err != nil {
		t.Fatal(err)
	}
	renderers := 0
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		cl, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cl), "--type=renderer") || !strings.Contains(string(cl), b.dataDir) && !browsertest.Descends(d.Name(), strconv.Itoa(pid)) {
			continue
		}
		ns, err := os.Readlink("/proc/" + d.Name() + "/ns/user")
		if err != nil {
			continue
		}
		renderers++
		if ns == own {
			t.Errorf("renderer %s shares agentd's user namespace: not sandboxed", d.Name())
		}
	}
	if renderers == 0 {
		t.Fatal("found no renderer process of the browser")
	}
}

// servePage serves one HTML page on loopback.
func servePage(t *testing.T, page string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// eval runs JavaScript in the active tab, for the test to change the page
// or look at it.
func eval[T any](t *testing.T, b *Browser, ctx context.Context, expr string) T {
	t.Helper()
	v, err := run(ctx, b.active, func(ctx context.Context, s *chromedp.Target) (T, error) {
		var v T
		err := evalValue(ctx, s, expr, &v)
		return v, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const guardedPage = `<!doctype html><title>Guarded</title>
<script>window.hits = [];</script>
<label>Secret <input type=password id=pw value="hunter2"></label>
<label>Card <input autocomplete="cc-number" id=card value="4111111111111111"></label>
<label>Note <input id=note value="visible"></label>
<div id=slot><button id=pay onclick="hits.push('old')">Pay</button></div>
<button id=under onclick="hits.push('under')" style="position:absolute; left:20px; top:300px">Under</button>
<div style="position:absolute; left:0; top:280px; width:400px; height:100px; background:#eee"></div>`

// A control the page replaced (same label, new element) is refused, and
// neither the old nor the new one is clicked; a covered control is not
// clicked either (the click would land on the cover).
func TestReplacedOrCoveredControlRefused(t *testing.T) {
	b, ctx := start(t)
	must(t)(b.Navigate(ctx, browser.NavigateArgs{URL: servePage(t, guardedPage)}))
	r := readPage(t, b, ctx, browser.FilterAll)
	pay, under := refOf(t, r, "Pay"), refOf(t, r, "Under")
	eval[bool](t, b, ctx, `(() => { const n = document.createElement("button"); n.textContent = "Pay";
		n.onclick = () => hits.push("new"); document.getElementById("slot").replaceChildren(n); return true; })()`)

	for ref, want := range map[string]string{pay: "gone", under: "covered"} {
		_, err := b.Click(ctx, browser.ClickArgs{Target: ref})
		var be *browser.BrowserError
		if !errors.As(err, &be) || !strings.Contains(be.Message, want) {
			t.Errorf("click %s: %v, want a BrowserError saying %q", ref, err, want)
		}
	}
	if hits := eval[[]string](t, b, ctx, `hits`); len(hits) != 0 {
		t.Errorf("clicked %v, want nothing", hits)
	}
	// After a new read, the new button is clicked, and only it.
	r = readPage(t, b, ctx, browser.FilterAll)
	must(t)(b.Click(ctx, browser.ClickArgs{Target: refOf(t, r, "Pay")}))
	if hits := eval[[]string](t, b, ctx, `hits`); len(hits) != 1 || hits[0] != "new" {
		t.Errorf("clicked %v, want [new]", hits)
	}
}

// Values of password and card fields are never reported; other fields'
// are.
func TestPrivateValuesNotReported(t *testing.T) {
	b, ctx := start(t)
	must(t)(b.Navigate(ctx, browser.NavigateArgs{URL: servePage(t, guardedPage)}))
	r := readPage(t, b, ctx, browser.FilterAll)
	values := map[string]*string{}
	for _, e := range r.Read.Elements {
		values[e.Label] = e.Value
	}
	for _, label := range []string{"Secret", "Card"} {
		if v, ok := values[label]; !ok || v != nil {
			t.Errorf("%s: reported %v, want the field without its value", label, v)
		}
	}
	if v := values["Note"]; v == nil || *v != "visible" {
		t.Errorf("Note: value %v, want \"visible\"", v)
	}
	if !slices.Contains(r.Read.Omitted, browser.OmittedPrivate) {
		t.Errorf("omitted %v, want private", r.Read.Omitted)
	}
	if strings.Contains(r.Read.Text, "hunter2") || strings.Contains(r.Read.Text, "4111") {
		t.Errorf("the text holds a private value: %q", r.Read.Text)
	}
}

// set_checked twice true leaves the box checked (the second changes
// nothing); run_script returns its value as text and is stopped at its
// timeout; click_at outside the visible area is refused.
func TestOptInMethods(t *testing.T) {
	b, ctx := start(t)
	_, r := openForm(t, b, ctx, browser.FilterAll)
	fragile := refOf(t, r, "Fragile")
	for range 2 {
		must(t)(b.SetChecked(ctx, browser.SetCheckedArgs{Target: fragile, Checked: true}))
		if !eval[bool](t, b, ctx, `document.getElementById("fragile").checked`) {
			t.Fatal("set_checked true left the box unchecked")
		}
	}
	must(t)(b.SetChecked(ctx, browser.SetCheckedArgs{Target: fragile, Checked: false}))
	if eval[bool](t, b, ctx, `document.getElementById("fragile").checked`) {
		t.Fatal("set_checked false left the box checked")
	}
	if _, err := b.SetChecked(ctx, browser.SetCheckedArgs{Target: refOf(t, r, "Name"), Checked: true}); err == nil {
		t.Error("set_checked on a text field succeeded")
	}

	for src, want := range map[string]string{`document.title`: "Pickup request", `1 + 1`: "2", `Promise.resolve({a: [1]})`: `{"a":[1]}`, `undefined`: ""} {
		got, err := b.RunScript(ctx, browser.RunScriptArgs{Source: src, TimeoutMS: 5000})
		if err != nil || got != want {
			t.Errorf("run_script %s = %q, %v; want %q", src, got, err, want)
		}
	}
	var be *browser.BrowserError
	if _, err := b.RunScript(ctx, browser.RunScriptArgs{Source: `while (true) {}`, TimeoutMS: 200}); !errors.As(err, &be) {
		t.Errorf("run_script of an endless loop: %v, want a BrowserError", err)
	}
	if _, err := b.RunScript(ctx, browser.RunScriptArgs{Source: `new Promise(() => {})`, TimeoutMS: 200}); !errors.As(err, &be) {
		t.Errorf("run_script of a promise that never settles: %v, want a BrowserError", err)
	}
	if got, err := b.RunScript(ctx, browser.RunScriptArgs{Source: `"still alive"`, TimeoutMS: 1000}); err != nil || got != "still alive" {
		t.Errorf("run_script after the timeouts: %q, %v", got, err)
	}
	if _, err := b.ClickAt(ctx, browser.ClickAtArgs{X: 100000, Y: 10, Button: browser.ButtonLeft, ClickCount: 1}); !errors.As(err, &be) {
		t.Errorf("click_at outside the visible area: %v, want a BrowserError", err)
	}
}
