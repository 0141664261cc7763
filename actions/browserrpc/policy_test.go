package browserrpc_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/actions/browserrpc"
	"github.com/agentd-dev/agentd/internal/browsertest"
)

// recorder is a loopback server that records every request it receives:
// the forbidden origin B of the attacks.
type recorder struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string
}

func startRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_ = req.ParseForm()
		r.mu.Lock()
		r.got = append(r.got, fmt.Sprintf("%s %s %v", req.Method, req.URL.Path, req.Form))
		r.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>B</title><p>forbidden origin</p>")
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// payload is the body of the download the allowed origin offers.
const payload = "download-payload-7c1f"

// allowedOrigin serves origin A's pages: each takes the browser to b a
// different way, and one offers a download.
func allowedOrigin(t *testing.T, b string) string {
	t.Helper()
	page := func(w http.ResponseWriter, title, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>%s</title>%s", title, body)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, b+"/redirect", http.StatusFound)
		case "/meta":
			page(w, "Meta", `<meta http-equiv="refresh" content="0; url=`+b+`/meta"><p>refreshing</p>`)
		case "/location":
			page(w, "Location", `<p>moving</p><script>setTimeout(() => { location = "`+b+`/location"; }, 0)</script>`)
		case "/link":
			page(w, "Link", `<a href="`+b+`/link">Go</a>`)
		case "/blank":
			page(w, "Blank", `<a href="`+b+`/blank" target="_blank">Go</a>`)
		case "/open":
			page(w, "Open", `<button onclick="window.open('`+b+`/open')">Go</button>`)
		case "/form":
			page(w, "Form", `<form method="post" action="`+b+`/form"><input name="secret" value="s3cr3t" aria-label="Secret"><button>Go</button></form>`)
		case "/download":
			page(w, "Download", `<a href="/file">Go</a>`)
		case "/file":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", `attachment; filename="payload.bin"`)
			fmt.Fprint(w, payload)
		case "/popup":
			page(w, "Popup", `<button onclick="window.open('/other')">Go</button><button onclick="document.title = 'Clicked'">Mark</button>`)
		default:
			page(w, "A", "<p>allowed origin</p>")
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// policyGuest is agentd --browser whose browser may load only from A, and
// a toolset over it whose URL policy allows A too.
func policyGuest(t *testing.T, a string) *browser.BrowserToolset {
	t.Helper()
	d, err := browsertest.StartGuest(t).Browser()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.SetAllowedOrigins(ctx, []string{a}); err != nil {
		t.Fatal(err)
	}
	return toolset(t, d, allowAll, a)
}

// firstRef is the ref of the element labelled label in the active tab.
func firstRef(t *testing.T, ts *browser.BrowserToolset, label string) string {
	t.Helper()
	r := refs(t, call(t, ts, "read_page", map[string]any{"filter": "all", "tab_id": nil}))
	ref, ok := r[label]
	if !ok {
		t.Fatalf("no %q on the page: %v", label, r)
	}
	return ref
}

// clickGo navigates the active tab to url, which must load, and clicks the
// page's Go.
func clickGo(t *testing.T, ts *browser.BrowserToolset, url string) output {
	t.Helper()
	if o := call(t, ts, "navigate", map[string]any{"url": url, "tab_id": nil}); !o.OK {
		t.Fatalf("navigate %s: %+v", url, o)
	}
	return call(t, ts, "click", map[string]any{"target": firstRef(t, ts, "Go"), "tab_id": nil})
}

// awaitRefusal returns the first error that names origin, from o or from
// the calls that follow it (a refusal after a call ended, as a pop-up's
// or a timer's, is reported by the next call).
func awaitRefusal(t *testing.T, ts *browser.BrowserToolset, o output, origin string) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if !o.OK && strings.Contains(o.Error, origin) {
			return o.Error
		}
		if time.Now().After(deadline) {
			t.Fatalf("no error naming %s reached the model; the last output: %+v", origin, o)
		}
		time.Sleep(100 * time.Millisecond)
		o = call(t, ts, "get_page_text", map[string]any{"tab_id": nil})
	}
}

// From an allowed origin, every way a page has to load another origin is
// refused by the guest's browser: B never receives a request, and the
// model is told, with B's origin named.
func TestBrowserPolicyRefusesEveryWayOut(t *testing.T) {
	b := startRecorder(t)
	a := allowedOrigin(t, b.srv.URL)
	ts := policyGuest(t, a)
	for _, c := range []struct {
		name, page string
		clickGo    bool // false: loading the page is the attack
	}{
		{"redirect", "/redirect", false},
		{"meta refresh", "/meta", false},
		{"location script", "/location", false},
		{"link", "/link", true},
		{"target _blank", "/blank", true},
		{"window.open", "/open", true},
		{"form post", "/form", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var o output
			if c.clickGo {
				o = clickGo(t, ts, a+c.page)
			} else {
				o = call(t, ts, "navigate", map[string]any{"url": a + c.page, "tab_id": nil})
			}
			msg := awaitRefusal(t, ts, o, b.srv.URL)
			if !strings.Contains(msg, "not an allowed origin") {
				t.Errorf("error %q: want it to say why", msg)
			}
			if got := b.requests(); len(got) != 0 {
				t.Errorf("the forbidden origin received %q", got)
			}
			closeOthers(t, ts)
		})
	}
}

// closeOthers closes every tab but the active one (the pop-ups a case
// opened).
func closeOthers(t *testing.T, ts *browser.BrowserToolset) {
	t.Helper()
	st := call(t, ts, "list_tabs", map[string]any{}).State
	if st == nil {
		t.Fatal("list_tabs: no state")
	}
	for _, tab := range st.Tabs {
		if !tab.Active {
			call(t, ts, "close_tab", map[string]any{"tab_id": tab.ID})
		}
	}
}

// A download from the allowed origin is not saved: no file of it anywhere
// in the browser's profile (its home, where Downloads is), and the model
// is told.
func TestBrowserPolicyDownloadRefused(t *testing.T) {
	b := startRecorder(t)
	a := allowedOrigin(t, b.srv.URL)
	ts := policyGuest(t, a)
	msg := awaitRefusal(t, ts, clickGo(t, ts, a+"/download"), "download")
	if !strings.Contains(msg, a) {
		t.Errorf("error %q: want the download's origin %s", msg, a)
	}
	profiles := browsertest.ChromiumProfiles(t)
	if len(profiles) == 0 {
		t.Fatal("found no profile directory of the guest's Chromium")
	}
	for _, p := range profiles {
		_ = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if strings.Contains(d.Name(), "payload") || strings.HasSuffix(d.Name(), ".crdownload") {
				t.Errorf("the download was saved: %s", path)
			} else if data, err := os.ReadFile(path); err == nil && strings.Contains(string(data), payload) && strings.Contains(path, "Download") {
				t.Errorf("the download's content was saved: %s", path)
			}
			return nil
		})
	}
}

// After a pop-up opened (in front of the tab that opened it), the calls on
// either tab complete: none waits for a frame the tab behind never renders.
func TestBrowserPolicyPopupDoesNotStall(t *testing.T) {
	b := startRecorder(t)
	a := allowedOrigin(t, b.srv.URL)
	ts := policyGuest(t, a)
	if o := clickGo(t, ts, a+"/popup"); !o.OK {
		t.Fatalf("click that opens the pop-up: %+v", o)
	}
	var popup string
	for deadline := time.Now().Add(30 * time.Second); popup == ""; {
		st := call(t, ts, "list_tabs", map[string]any{}).State
		for _, tab := range st.Tabs {
			if !tab.Active {
				popup = tab.ID
			}
		}
		if popup == "" && time.Now().After(deadline) {
			t.Fatalf("no pop-up among the tabs: %+v", st)
		}
	}
	// The opener, now behind the pop-up: each call must return (call's
	// own deadline is a minute; the stall lasted until the call's end).
	if o := call(t, ts, "click", map[string]any{"target": firstRef(t, ts, "Mark"), "tab_id": nil}); !o.OK {
		t.Fatalf("click in the opener: %+v", o)
	}
	if o := call(t, ts, "scroll", map[string]any{"direction": "down", "amount": 100, "tab_id": nil}); !o.OK {
		t.Fatalf("scroll in the opener: %+v", o)
	}
	if o := call(t, ts, "navigate", map[string]any{"url": a + "/", "tab_id": nil}); !o.OK {
		t.Fatalf("navigate in the opener: %+v", o)
	}
	// The pop-up itself.
	if o := call(t, ts, "switch_tab", map[string]any{"tab_id": popup}); !o.OK {
		t.Fatalf("switch to the pop-up: %+v", o)
	}
	if o := call(t, ts, "get_page_text", map[string]any{"tab_id": nil}); !o.OK || !strings.Contains(string(o.Result), "allowed origin") {
		t.Fatalf("read the pop-up: %+v", o)
	}
	if got := b.requests(); len(got) != 0 {
		t.Errorf("the forbidden origin received %q", got)
	}
}

// allow_origins is refused for a driver without a load policy, and its
// arguments are decoded strictly.
func TestBrowserPolicyServe(t *testing.T) {
	ctx := context.Background()
	if _, err := browserrpc.Serve(ctx, stateOnly{}, browserrpc.MemberAllowOrigins, []byte(`{"origins":["https://a.example"]}`)); err == nil {
		t.Error("allow_origins accepted by a driver that cannot enforce it")
	}
	p := &recordingPolicy{}
	if _, err := browserrpc.Serve(ctx, p, browserrpc.MemberAllowOrigins, []byte(`{"origins":["https://a.example"],"extra":1}`)); err == nil {
		t.Error("allow_origins with an unknown field accepted")
	}
	if _, err := browserrpc.Serve(ctx, p, browserrpc.MemberAllowOrigins, []byte(`{"origins":["https://a.example"]}`)); err != nil || len(p.got) != 1 || p.got[0] != "https://a.example" {
		t.Errorf("allow_origins: %v, set %q", err, p.got)
	}
}

type stateOnly struct{}

func (stateOnly) State(context.Context) (browser.State, error) { return browser.State{}, nil }

type recordingPolicy struct {
	stateOnly
	got []string
}

func (p *recordingPolicy) SetAllowedOrigins(_ context.Context, origins []string) error {
	p.got = origins
	return nil
}
