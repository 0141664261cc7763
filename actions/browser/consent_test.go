package browser

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestURLPolicyLookalikeHost is the contract's example: with only
// https://example.com allowed, https://example.com.evil.test is refused by
// the policy, before confirm is asked and before anything navigates.
func TestURLPolicyLookalikeHost(t *testing.T) {
	allow, err := AllowOrigins("https://example.com")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []Member{Navigate, NewTab} {
		f := newFake()
		var asked []string
		policy := func(ctx context.Context, req URLPolicyRequest) (any, error) {
			f.log.Add("policy")
			asked = append(asked, req.URL.String())
			return allow(ctx, req)
		}
		ts := newToolset(t, f, WithURLPolicy(policy))
		args := `{"url":"https://example.com.evil.test/login","tab_id":null}`
		if m == NewTab {
			args = `{"url":"https://example.com.evil.test/login"}`
		}
		o, rec := runOne(t, ts, m, args)
		if o.Body.OK || rec.Outcome != OutcomeRefused || rec.Attempted || !strings.Contains(o.Body.Error, "URL policy") {
			t.Fatalf("%s: output %s, record %+v; want refused by the policy", m, o.Raw, rec)
		}
		if got, want := f.log.Entries(), []string{"state", "policy", "state"}; !slices.Equal(got, want) {
			t.Fatalf("%s: ran %v, want %v (no confirm, no %s)", m, got, want, m)
		}
		if !slices.Equal(asked, []string{"https://example.com.evil.test/login"}) {
			t.Fatalf("%s: the policy saw %v", m, asked)
		}
		if o.Body.State == nil {
			t.Fatalf("%s: a refused call's output has no state: %s", m, o.Raw)
		}
	}
}

func TestAllowOrigins(t *testing.T) {
	allow, err := AllowOrigins("https://example.com", "http://127.0.0.1:8080", "https://[::1]:8443")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		url string
		ok  bool
	}{
		{"https://example.com", true},
		{"https://example.com/path?q=1#f", true},
		{"HTTPS://EXAMPLE.COM/", true},
		{"https://example.com:443/", true},
		{"https://user:pw@example.com/", true},
		{"https://example.com.evil.test/", false},
		{"https://example.com@evil.test/", false},
		{"https://evil.test/?https://example.com", false},
		{"https://www.example.com/", false},
		{"https://example.com./", false},
		{"https://example.com:8443/", false},
		{"http://example.com/", false},
		{"wss://example.com/", false},
		{"http://127.0.0.1:8080/form", true},
		{"http://127.0.0.1/", false},
		{"http://127.0.0.1:80800/", false},
		{"https://[::1]:8443/", true},
		{"https://[::1]/", false},
		{"file:///etc/passwd", false},
		{"javascript:alert(1)", false},
	}
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		v, err := allow(context.Background(), URLPolicyRequest{URL: u})
		if err != nil || v != c.ok {
			t.Errorf("%s: %v, %v; want %v", c.url, v, err, c.ok)
		}
	}
	for _, bad := range [][]string{nil, {"https://example.com/path"}, {"example.com"}, {"https://u@example.com"},
		{"https://example.com?q"}, {"https://example.com#f"}} {
		if _, err := AllowOrigins(bad...); err == nil {
			t.Errorf("AllowOrigins(%q) accepted a non-origin", bad)
		}
	}
}

func TestURLPolicyBeforeConfirmAndBlankTab(t *testing.T) {
	f := newFake()
	ts := newToolset(t, f)
	runOne(t, ts, Navigate, validArgs[Navigate])
	if got, want := f.log.Entries(), []string{"state", "policy", "confirm", "navigate", "state"}; !slices.Equal(got, want) {
		t.Fatalf("navigate ran %v, want %v", got, want)
	}

	// A blank new tab needs confirm but has no URL to check.
	f = newFake()
	ts = newToolset(t, f)
	o, _ := runOne(t, ts, NewTab, `{"url":null}`)
	if !o.Body.OK {
		t.Fatalf("blank new tab: %s", o.Raw)
	}
	if got, want := f.log.Entries(), []string{"state", "confirm", "new_tab", "state"}; !slices.Equal(got, want) {
		t.Fatalf("blank new_tab ran %v, want %v", got, want)
	}
	// Refused by confirm, it does not open.
	f = newFake()
	ts = newToolset(t, f, WithConfirm(f.confirmer(false)))
	o, rec := runOne(t, ts, NewTab, `{"url":null}`)
	if o.Body.OK || rec.Outcome != OutcomeRefused || slices.Contains(f.log.Entries(), "new_tab") {
		t.Fatalf("refused blank tab: %s, ran %v", o.Raw, f.log.Entries())
	}
}

type namedBool bool

// TestConfirmExactlyTrue checks that only the bool true approves, for the
// confirm callback and the URL policy alike.
func TestConfirmExactlyTrue(t *testing.T) {
	yes := true
	answers := []struct {
		name string
		v    any
		ok   bool
	}{
		{"true", true, true},
		{"false", false, false},
		{"the string true", "true", false},
		{"nil", nil, false},
		{"1", 1, false},
		{"a named bool type", namedBool(true), false},
		{"a pointer to true", &yes, false},
		{"a list holding true", []any{true}, false},
	}
	for _, a := range answers {
		for _, m := range []Member{Click, ReadDiagnostics, UploadFile} {
			f := newFake()
			ts := newToolset(t, f, WithConfirm(f.confirmer(a.v)))
			o, rec := runOne(t, ts, m, validArgs[m])
			ran := slices.Contains(f.log.Entries(), string(m))
			if ran != a.ok || o.Body.OK != a.ok || (rec.Outcome == OutcomeRefused) == a.ok {
				t.Errorf("%s answering %s: ran %v, output %s", m, a.name, ran, o.Raw)
			}
			if !a.ok && (!strings.Contains(o.Body.Error, "not approved") || o.Body.State == nil) {
				t.Errorf("%s answering %s: output %s, want a refusal with state", m, a.name, o.Raw)
			}
		}
		f := newFake()
		ts := newToolset(t, f, WithURLPolicy(f.policy(a.v)))
		runOne(t, ts, Navigate, validArgs[Navigate])
		if ran := slices.Contains(f.log.Entries(), "navigate"); ran != a.ok {
			t.Errorf("URL policy answering %s: navigated %v (%v)", a.name, ran, f.log.Entries())
		}
		if asked := slices.Contains(f.log.Entries(), "confirm"); asked != a.ok {
			t.Errorf("URL policy answering %s: confirm asked %v", a.name, asked)
		}
	}
}

// TestConsentCallbackFailureStops checks that a callback that fails (error
// or panic) stops the run with nothing done, not a refusal the model sees.
func TestConsentCallbackFailureStops(t *testing.T) {
	boom := errors.New("approval service down")
	callbacks := map[string]ConfirmFunc{
		"error": func(context.Context, ConsentRequest) (any, error) { return true, boom },
		"panic": func(context.Context, ConsentRequest) (any, error) { panic("approval UI crashed") },
	}
	for name, cb := range callbacks {
		f := newFake()
		ts := newToolset(t, f, WithConfirm(cb))
		_, res, err := runCalls(t, ts, [2]string{"click", validArgs[Click]}, [2]string{"read_page", validArgs[ReadPage]})
		var se *StopError
		if !errors.As(err, &se) || !errors.Is(err, ErrConsentFailed) || se.CallID != "c1" || se.Attempted {
			t.Fatalf("%s: Run error %v, want a StopError for c1 matching ErrConsentFailed", name, err)
		}
		if name == "error" && !errors.Is(err, boom) {
			t.Errorf("the error %v does not wrap the callback's", err)
		}
		if len(res.Outputs) != 0 || slices.Contains(f.log.Entries(), "click") || slices.Contains(f.log.Entries(), "read_page") {
			t.Fatalf("%s: outputs %d, ran %v", name, len(res.Outputs), f.log.Entries())
		}
	}
	f := newFake()
	ts := newToolset(t, f, WithURLPolicy(func(context.Context, URLPolicyRequest) (any, error) { panic("policy bug") }))
	_, _, err := runCalls(t, ts, [2]string{"navigate", validArgs[Navigate]})
	if !errors.Is(err, ErrConsentFailed) || slices.Contains(f.log.Entries(), "navigate") {
		t.Fatalf("a panicking URL policy: %v, ran %v", err, f.log.Entries())
	}
}

// TestConsentGetsIndependentCopies checks each callback gets its own copy
// of member, arguments, state and call_id: changing it changes neither what
// the next callback sees nor what the driver gets.
func TestConsentGetsIndependentCopies(t *testing.T) {
	f := newFake()
	var confirmSaw []ConsentRequest
	policy := func(_ context.Context, req URLPolicyRequest) (any, error) {
		if req.Member != Navigate || req.CallID != "c1" || req.State == nil || req.State.Tabs[0].URL != "https://example.com" {
			t.Errorf("policy request %+v", req)
		}
		req.URL.Host = "evil.test"
		req.State.Tabs[0].ID = "changed"
		a := req.Arguments.(NavigateArgs)
		*a.TabID = "changed"
		return true, nil
	}
	confirm := func(_ context.Context, req ConsentRequest) (any, error) {
		confirmSaw = append(confirmSaw, req)
		switch a := req.Arguments.(type) {
		case NavigateArgs:
			*a.TabID = "changed again"
		case KeyArgs:
			a.Keys[0] = "Delete"
		case DragPathArgs:
			a.Path[0].X = 999
			a.Keys[0] = ModifierMeta
		}
		req.State.Tabs[0].Title = "changed"
		return true, nil
	}
	ts := newToolset(t, f, WithConfirm(confirm), WithURLPolicy(policy))
	_, _, err := runCalls(t, ts,
		[2]string{"navigate", `{"url":"https://example.com/a","tab_id":"t1"}`},
		[2]string{"key", `{"keys":["Enter"],"tab_id":null}`},
		[2]string{"drag_path", `{"tab_id":null,"path":[{"x":1,"y":2},{"x":3,"y":4}],"keys":["Shift"]}`})
	if err != nil {
		t.Fatal(err)
	}
	if len(confirmSaw) != 3 {
		t.Fatalf("confirm asked %d times", len(confirmSaw))
	}
	nav := confirmSaw[0].Arguments.(NavigateArgs)
	if nav.URL != "https://example.com/a" || *nav.TabID != "changed again" || confirmSaw[0].State.Tabs[0].ID != "t1" {
		t.Errorf("confirm saw the policy's changes: %+v %+v", nav, confirmSaw[0].State)
	}
	got := f.received()
	want := []Arguments{
		NavigateArgs{URL: "https://example.com/a", TabID: Text("t1")},
		KeyArgs{Keys: []string{"Enter"}},
		DragPathArgs{Path: []Point{{1, 2}, {3, 4}}, Keys: []Modifier{ModifierShift}},
	}
	for i := range want {
		if !argsEqual(got[i], want[i]) {
			t.Errorf("the driver got %#v, want %#v: a callback's change reached it", got[i], want[i])
		}
	}
}

func argsEqual(a, b Arguments) bool {
	ja, _ := marshal(a)
	jb, _ := marshal(b)
	return string(ja) == string(jb)
}

// TestConfirmReads checks a listed read asks confirm with phase before_read
// and no state before anything is read, and a refusal returns no content
// and no state.
func TestConfirmReads(t *testing.T) {
	reads := []Member{ReadPage, GetPageText, Find, WaitFor, Screenshot, Zoom, ListTabs, ReadPageScoped}
	for _, m := range reads {
		for _, approve := range []bool{true, false} {
			f := newFake()
			f.results[ReadPage] = TextRead("private text")
			var req ConsentRequest
			confirm := func(ctx context.Context, r ConsentRequest) (any, error) {
				req = r
				return f.confirmer(approve)(ctx, r)
			}
			ts := newToolset(t, f, WithConfirm(confirm), WithConfirmReads(m))
			o, rec := runOne(t, ts, m, validArgs[m])
			if req.Phase != PhaseBeforeRead || req.State != nil || req.Member != m || req.CallID != "c1" || req.Arguments.Member() != m {
				t.Errorf("%s: confirm got %+v, want phase before_read and no state", m, req)
			}
			log := f.log.Entries()
			if log[0] != "confirm:before_read" {
				t.Errorf("%s: ran %v; confirm must come before any read", m, log)
			}
			if approve {
				if !o.Body.OK || o.Body.State == nil {
					t.Errorf("%s approved: %s", m, o.Raw)
				}
				continue
			}
			if !slices.Equal(log, []string{"confirm:before_read"}) {
				t.Errorf("%s refused: ran %v, want nothing read, not even the state", m, log)
			}
			if o.Body.OK || o.has("state") || o.has("result") || o.Image != nil || rec.Outcome != OutcomeReadRefused {
				t.Errorf("%s refused: output %s (record %+v), want a refusal with no content and no state", m, o.Raw, rec)
			}
		}
	}
	// Reads not listed ask nothing.
	f := newFake()
	ts := newToolset(t, f, WithConfirmReads(Find))
	runOne(t, ts, ReadPage, validArgs[ReadPage])
	if got := f.log.Entries(); !slices.Equal(got, []string{"read_page", "state"}) {
		t.Fatalf("an unlisted read ran %v", got)
	}
}

// A consent question never shows typed text or a script's source, only
// their length (issue: browser mode printed typed passwords on the
// terminal); the rest of the call is shown as it is.
func TestBrowserSafetyConsentSummaryHidesTypedText(t *testing.T) {
	const secret = "hunter2-Sécret"
	target := "e3"
	for _, c := range []struct {
		req  ConsentRequest
		want string
	}{
		{ConsentRequest{Member: Type, Arguments: TypeArgs{Text: secret, Target: &target}}, `type 14 chars {"target":"e3","tab_id":null}`},
		{ConsentRequest{Member: RunScript, Arguments: RunScriptArgs{Source: "fetch('/x?" + secret + "')", TimeoutMS: 500}}, `run_script a script of 26 chars {"tab_id":null,"timeout_ms":500}`},
		{ConsentRequest{Member: Navigate, Arguments: NavigateArgs{URL: "https://shop.example/"}}, `navigate {"url":"https://shop.example/","tab_id":null}`},
	} {
		got := c.req.Summary()
		if strings.Contains(got, secret) || got != c.want {
			t.Errorf("Summary() = %q, want %q", got, c.want)
		}
	}
}

// Where names the active tab a call acts on, or the browser when no tab is
// known to be active.
func TestConsentWhere(t *testing.T) {
	tabs := []Tab{{ID: "t1", Title: "Cart", URL: "https://shop.example/cart"}, {ID: "t2", Title: "Login", URL: "https://shop.example/login", Active: true}}
	for _, c := range []struct {
		state *State
		want  string
	}{
		{&State{Tabs: tabs}, `"Login" (https://shop.example/login)`},
		{&State{Tabs: tabs[:1]}, "the browser"},
		{nil, "the browser"},
	} {
		if got := (ConsentRequest{Member: Click, State: c.state}).Where(); got != c.want {
			t.Errorf("Where() with tabs %v = %q, want %q", c.state, got, c.want)
		}
	}
}
