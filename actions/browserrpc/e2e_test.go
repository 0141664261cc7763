package browserrpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/internal/browsertest"
	"github.com/agentd-dev/agentd/tools/exercise"
	"github.com/agentd-dev/agentd/tools/exercise/form"
)

// startGuestBrowser is the guest's Chromium driver as the host sees it.
func startGuestBrowser(t *testing.T) browser.Driver {
	t.Helper()
	d, err := browsertest.StartGuest(t).Browser()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// output is a browser call's output as the model reads it.
type output struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
	State  *browser.State  `json:"state"`
}

// call runs one function call as the model wrote it and decodes the
// output's text.
func call(t *testing.T, ts *browser.BrowserToolset, name string, args any) output {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := ts.Execute(ctx, browser.Call{CallID: "call_" + name, Name: name, Arguments: string(raw)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return decodeOutput(t, res)
}

func decodeOutput(t *testing.T, res browser.Result) output {
	t.Helper()
	if len(res.Outputs) != 1 {
		t.Fatalf("%d outputs, want 1", len(res.Outputs))
	}
	text := res.Outputs[0].Text
	var out output
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("output %q: %v", text, err)
	}
	return out
}

// refs maps labels to refs in a read_page output.
func refs(t *testing.T, o output) map[string]string {
	t.Helper()
	var r browser.BrowserReadV1
	if !o.OK || json.Unmarshal(o.Result, &r) != nil {
		t.Fatalf("read_page output %+v", o)
	}
	m := map[string]string{}
	for _, e := range r.Elements {
		m[e.Label] = e.Ref
	}
	return m
}

func allowAll(context.Context, browser.ConsentRequest) (any, error) { return true, nil }

func toolset(t *testing.T, d browser.Driver, confirm browser.ConfirmFunc, origins ...string) *browser.BrowserToolset {
	t.Helper()
	policy, err := browser.AllowOrigins(origins...)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := browser.New(d, browser.WithConfirm(confirm), browser.WithURLPolicy(policy))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func formServer(t *testing.T) *form.RecordServer { return browsertest.FormServer(t) }

func origin(u string) string { return strings.TrimSuffix(u, "/") }

// TestGuestBrowserFillsForm: read_page's refs, then type, select_option
// and click through agentd's websocket into Chromium; the server's record
// is exactly what the calls said.
func TestGuestBrowserFillsForm(t *testing.T) {
	d := startGuestBrowser(t)
	srv := formServer(t)
	ts := toolset(t, d, allowAll, origin(srv.URL()))

	if o := call(t, ts, "navigate", map[string]any{"url": srv.URL(), "tab_id": nil}); !o.OK {
		t.Fatalf("navigate: %+v", o)
	}
	r := refs(t, call(t, ts, "read_page", map[string]any{"filter": "interactive", "tab_id": nil}))
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"type", map[string]any{"text": exercise.PickupName, "target": r["Name"], "tab_id": nil}},
		{"type", map[string]any{"text": "2025-03-14", "target": r["Date (YYYY-MM-DD)"], "tab_id": nil}},
		{"select_option", map[string]any{"target": r["Pickup slot"], "values": []string{"Afternoon"}, "tab_id": nil}},
		{"click", map[string]any{"target": r["Fragile"], "tab_id": nil}},
		{"click", map[string]any{"target": r["Submit"], "tab_id": nil}},
	} {
		if o := call(t, ts, c.name, c.args); !o.OK {
			t.Fatalf("%s %v: %+v", c.name, c.args, o)
		}
	}
	recs, err := srv.Records()
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %+v (%v), want one", recs, err)
	}
	if got := recs[0]; got.Name != exercise.PickupName || got.Date != "2025-03-14" || got.Slot != "Afternoon" || !got.Fragile {
		t.Errorf("record %+v", got)
	}
	st := call(t, ts, "list_tabs", map[string]any{}).State
	if st == nil || len(st.Tabs) != 1 || st.Tabs[0].Title != "Saved" || st.Tabs[0].URL != origin(srv.URL()) {
		t.Errorf("state after submit %+v, want the saved page, its origin only", st)
	}
}

// TestGuestBrowserStaleRef: a ref read before a navigation gets a
// BrowserError the model reads, and nothing is clicked.
func TestGuestBrowserStaleRef(t *testing.T) {
	d := startGuestBrowser(t)
	srv := formServer(t)
	ts := toolset(t, d, allowAll, origin(srv.URL()))
	call(t, ts, "navigate", map[string]any{"url": srv.URL(), "tab_id": nil})
	r := refs(t, call(t, ts, "read_page", map[string]any{"filter": "all", "tab_id": nil}))
	call(t, ts, "navigate", map[string]any{"url": srv.URL(), "tab_id": nil})

	o := call(t, ts, "click", map[string]any{"target": r["Submit"], "tab_id": nil})
	if o.OK || !strings.Contains(o.Error, "stale") || o.State == nil {
		t.Fatalf("click on a stale ref: %+v, want the driver's stale-ref message and the state", o)
	}
	if recs, err := srv.Records(); err != nil || len(recs) != 0 {
		t.Errorf("records %+v (%v), want none: nothing may be clicked", recs, err)
	}
	if o.State.Tabs[0].Title != "Pickup request" {
		t.Errorf("state %+v, want the form still shown", o.State)
	}
}

// TestGuestBrowserURLPolicyLookalike: a host that only starts with the
// allowed one is refused by the policy before confirm is asked, and the
// page stays.
func TestGuestBrowserURLPolicyLookalike(t *testing.T) {
	d := startGuestBrowser(t)
	srv := formServer(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(origin(srv.URL()), "http://"))
	allowed := "http://localhost:" + port
	var confirms atomic.Int32
	ts := toolset(t, d, func(context.Context, browser.ConsentRequest) (any, error) {
		confirms.Add(1)
		return true, nil
	}, allowed)
	if o := call(t, ts, "navigate", map[string]any{"url": allowed + "/", "tab_id": nil}); !o.OK {
		t.Fatalf("navigate to the allowed origin: %+v", o)
	}
	before := confirms.Load()
	for _, u := range []string{"http://localhost.evil.test:" + port + "/", "http://localhost:" + port + "@evil.test/",
		"http://127.0.0.1:" + port + "/"} {
		o := call(t, ts, "navigate", map[string]any{"url": u, "tab_id": nil})
		if o.OK || !strings.Contains(o.Error, "URL policy") {
			t.Errorf("navigate %s: %+v, want refused by the URL policy", u, o)
		}
		if o.State == nil || o.State.Tabs[0].URL != allowed {
			t.Errorf("navigate %s: state %+v, want the allowed page still shown", u, o.State)
		}
	}
	if confirms.Load() != before {
		t.Errorf("confirm was asked %d times for refused URLs, want never", confirms.Load()-before)
	}
}

// TestGuestBrowserConfirmStringTrue: confirm answering the string "true"
// refuses; the click does not happen.
func TestGuestBrowserConfirmStringTrue(t *testing.T) {
	d := startGuestBrowser(t)
	srv := formServer(t)
	answer := any(true)
	ts := toolset(t, d, func(context.Context, browser.ConsentRequest) (any, error) { return answer, nil }, origin(srv.URL()))
	call(t, ts, "navigate", map[string]any{"url": srv.URL(), "tab_id": nil})
	r := refs(t, call(t, ts, "read_page", map[string]any{"filter": "all", "tab_id": nil}))
	call(t, ts, "type", map[string]any{"text": "Ann", "target": r["Name"], "tab_id": nil})
	call(t, ts, "type", map[string]any{"text": "2025-03-14", "target": r["Date (YYYY-MM-DD)"], "tab_id": nil})
	call(t, ts, "select_option", map[string]any{"target": r["Pickup slot"], "values": []string{"Morning"}, "tab_id": nil})

	answer = "true"
	o := call(t, ts, "click", map[string]any{"target": r["Submit"], "tab_id": nil})
	if o.OK || !strings.Contains(o.Error, "not approved") {
		t.Fatalf("click confirmed with the string \"true\": %+v, want refused", o)
	}
	if recs, err := srv.Records(); err != nil || len(recs) != 0 {
		t.Errorf("records %+v (%v), want none", recs, err)
	}
	answer = true
	if o := call(t, ts, "click", map[string]any{"target": r["Submit"], "tab_id": nil}); !o.OK {
		t.Fatalf("click confirmed with true: %+v", o)
	}
	if recs, err := srv.Records(); err != nil || len(recs) != 1 {
		t.Errorf("records %+v (%v), want the one submission", recs, err)
	}
}

// TestGuestBrowserTitleTruncation: a title one byte over the limit whose
// last character is two bytes is cut before that character, not in it.
func TestGuestBrowserTitleTruncation(t *testing.T) {
	d := startGuestBrowser(t)
	title := strings.Repeat("a", browser.MaxTitleBytes-1) + "é" + "tail"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>%s</title><p>long title</p>", title)
	})}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close() })
	page := "http://" + ln.Addr().String()
	ts := toolset(t, d, allowAll, page)
	o := call(t, ts, "navigate", map[string]any{"url": page + "/", "tab_id": nil})
	if !o.OK || o.State == nil || len(o.State.Tabs) != 1 {
		t.Fatalf("navigate: %+v", o)
	}
	tab := o.State.Tabs[0]
	if want := strings.Repeat("a", browser.MaxTitleBytes-1); tab.Title != want || !tab.TitleTruncated {
		t.Errorf("title %d bytes %q… truncated %v, want the %d a's and title_truncated", len(tab.Title), tab.Title[len(tab.Title)-4:], tab.TitleTruncated, len(want))
	}
}
