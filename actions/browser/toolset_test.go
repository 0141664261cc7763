package browser

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// Partial drivers, made of the fake's methods: each implements only the
// interfaces it embeds.
type stateOnly struct{ StateReader }

type readOnly struct {
	StateReader
	PageReader
}

type readAndClick struct {
	StateReader
	PageReader
	Clicker
}

type navigator struct {
	StateReader
	Navigator
}

type tabOpener struct {
	StateReader
	TabOpener
}

func TestMemberLists(t *testing.T) {
	all, defaults := AllMembers(), DefaultMembers()
	if len(all) != 28 || len(defaults) != 18 {
		t.Fatalf("%d members and %d defaults, want 28 and 18", len(all), len(defaults))
	}
	wantDefaults := []Member{"navigate", "read_page", "get_page_text", "find", "click", "type", "key", "scroll",
		"scroll_to", "wait_for", "select_option", "hover", "screenshot", "zoom", "new_tab", "list_tabs", "switch_tab", "close_tab"}
	if !slices.Equal(defaults, wantDefaults) {
		t.Fatalf("defaults %v, want %v", defaults, wantDefaults)
	}
	wantOptIn := []Member{"read_page_scoped", "click_at", "drag_path", "hold_keys", "hover_at", "set_checked",
		"read_diagnostics", "run_script", "upload_file", "download_file"}
	if !slices.Equal(all[:18], defaults) || !slices.Equal(all[18:], wantOptIn) {
		t.Fatalf("all members %v", all)
	}
	// The lists are the caller's own.
	all[0], defaults[0] = "x", "x"
	if AllMembers()[0] != Navigate || DefaultMembers()[0] != Navigate {
		t.Fatal("changing a returned list changed the package's")
	}
}

func TestDefaultsAreTheImplementedDefaults(t *testing.T) {
	f := newFake()
	ts, err := New(f, WithConfirm(f.confirmer(true)), WithURLPolicy(f.policy(true)))
	if err != nil {
		t.Fatal(err)
	}
	if got := ts.Members(); !slices.Equal(got, DefaultMembers()) {
		t.Fatalf("members %v, want the 18 defaults: opt-in members stay off even when implemented", got)
	}
	for _, m := range []Member{ReadPageScoped, ClickAt, RunScript, UploadFile} {
		if ts.Claims(string(m)) {
			t.Errorf("%s is claimed without being selected", m)
		}
	}

	// A read-only driver offers read_page and the derived list_tabs, and
	// needs neither confirm nor a URL policy.
	ro, err := New(readOnly{f, f})
	if err != nil {
		t.Fatal(err)
	}
	if got := ro.Members(); !slices.Equal(got, []Member{ReadPage, ListTabs}) {
		t.Fatalf("read-only driver offers %v", got)
	}
}

func TestSelectMembers(t *testing.T) {
	f := newFake()
	confirm := WithConfirm(f.confirmer(true))

	// The toolset keeps its own order and its own copy of the selection.
	sel := []Member{RunScript, ReadPage, ClickAt, Screenshot}
	ts, err := New(f, WithMembers(sel...), confirm)
	if err != nil {
		t.Fatal(err)
	}
	sel[0] = Navigate
	if got := ts.Members(); !slices.Equal(got, []Member{ReadPage, Screenshot, ClickAt, RunScript}) {
		t.Fatalf("members %v", got)
	}

	// Additional members keep the implemented defaults.
	ts, err = New(readAndClick{f, f, f}, WithAdditionalMembers(), confirm)
	if err != nil {
		t.Fatal(err)
	}
	if got := ts.Members(); !slices.Equal(got, []Member{ReadPage, Click, ListTabs}) {
		t.Fatalf("members %v", got)
	}
	ts, err = New(f, WithAdditionalMembers(SetChecked, ReadDiagnostics), confirm, WithURLPolicy(allowAll))
	if err != nil {
		t.Fatal(err)
	}
	want := append(DefaultMembers(), SetChecked, ReadDiagnostics)
	if got := ts.Members(); !slices.Equal(got, want) {
		t.Fatalf("members %v, want %v", got, want)
	}

	// An empty list offers nothing.
	ts, err = New(f, WithMembers())
	if err != nil {
		t.Fatal(err)
	}
	if len(ts.Members()) != 0 || ts.Claims("read_page") || ts.Claims("list_tabs") {
		t.Fatalf("an empty selection offers %v", ts.Members())
	}

	// list_tabs needs nothing but State.
	if _, err := New(stateOnly{f}, WithMembers(ListTabs)); err != nil {
		t.Fatalf("list_tabs on a state-only driver: %v", err)
	}
}

func TestNewRefusesBadConfigurations(t *testing.T) {
	f := newFake()
	confirm, policy := WithConfirm(f.confirmer(true)), WithURLPolicy(allowAll)
	cases := []struct {
		name string
		d    Driver
		opts []Option
		want string
	}{
		{"nil driver", nil, nil, "nil driver"},
		{"members and additional", f, []Option{WithMembers(ReadPage), WithAdditionalMembers(ClickAt), confirm}, "cannot be combined"},
		{"members twice", f, []Option{WithMembers(ReadPage), WithMembers(Find)}, "WithMembers given twice"},
		{"additional members twice", f, []Option{WithAdditionalMembers(ClickAt), WithAdditionalMembers(HoverAt), confirm}, "WithAdditionalMembers given twice"},
		{"unknown member", f, []Option{WithMembers("read_pages")}, `"read_pages" is not a browser member`},
		{"repeated member", f, []Option{WithMembers(ReadPage, ReadPage)}, `"read_page" is listed twice`},
		{"not implemented", readOnly{f, f}, []Option{WithMembers(ReadPage, Find)}, `does not implement "find"`},
		{"additional not implemented", readOnly{f, f}, []Option{WithAdditionalMembers(ClickAt), confirm}, `does not implement "click_at"`},
		{"additional unknown", f, []Option{WithAdditionalMembers("browser_click"), confirm, policy}, "not a browser member"},
		{"click without confirm", f, []Option{WithMembers(ReadPage, Click)}, "confirm callback is required for click"},
		{"diagnostics without confirm", f, []Option{WithMembers(ReadDiagnostics)}, "confirm callback is required for read_diagnostics"},
		{"defaults without confirm", readAndClick{f, f, f}, nil, "confirm callback is required for click"},
		{"navigate without policy", navigator{f, f}, []Option{confirm}, "URL policy is required when navigate is enabled"},
		{"new_tab without policy", tabOpener{f, f}, []Option{confirm}, "URL policy is required when new_tab is enabled"},
		{"confirm reads without confirm", f, []Option{WithMembers(ReadPage), WithConfirmReads(ReadPage)}, "required for confirm reads"},
		{"confirm reads of an action", f, []Option{WithMembers(Click), WithConfirmReads(Click), confirm}, `"click" is not a read member`},
		{"confirm reads not enabled", f, []Option{WithMembers(ReadPage), WithConfirmReads(Find), confirm}, `"find" is not enabled`},
		{"confirm reads unknown", f, []Option{WithMembers(ReadPage), WithConfirmReads("peek"), confirm}, "not a browser member"},
		{"confirm reads twice", f, []Option{WithMembers(ReadPage), WithConfirmReads(ReadPage, ReadPage), confirm}, "listed twice"},
	}
	for _, c := range cases {
		ts, err := New(c.d, c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New = %v, %v; want an error with %q", c.name, ts, err, c.want)
		}
	}
}

// TestDisabledCallsRefusedBeforeStateOrConsent checks a call of a member
// that is not enabled reads nothing and asks nothing.
func TestDisabledCallsRefusedBeforeStateOrConsent(t *testing.T) {
	f := newFake()
	ts, err := New(f, WithMembers(ReadPage, Click), WithConfirm(f.confirmer(true)))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []Member{Navigate, ClickAt, RunScript, ListTabs} {
		if ts.Claims(string(m)) {
			t.Errorf("%s is claimed", m)
		}
		o, rec := runOne(t, ts, m, validArgs[m])
		if o.Body.OK || o.has("state") || !strings.Contains(o.Body.Error, string(m)+" is not an enabled browser method") {
			t.Errorf("%s: output %s", m, o.Raw)
		}
		if rec.Outcome != OutcomeInvalid || rec.Attempted {
			t.Errorf("%s: record %+v", m, rec)
		}
	}
	if log := f.log.Entries(); len(log) != 0 {
		t.Fatalf("disabled calls read state or asked consent: %v", log)
	}

	// Names that are no browser member are not this toolset's at all.
	if _, err := ts.Prepare([]Call{{CallID: "c1", Name: "browser_lookup", Arguments: "{}"}}); err == nil {
		t.Fatal("Prepare took a call that is no browser member")
	}
	if _, err := ts.Prepare([]Call{{CallID: "", Name: "read_page", Arguments: validArgs[ReadPage]}}); err == nil {
		t.Fatal("Prepare took a call without call_id")
	}
	if _, err := ts.Prepare([]Call{{CallID: "c1", Name: "read_page", Arguments: validArgs[ReadPage]},
		{CallID: "c1", Name: "click", Arguments: validArgs[Click]}}); err == nil {
		t.Fatal("Prepare took a repeated call_id")
	}
}

// TestDisablingListTabsKeepsState checks other calls still report state.
func TestDisablingListTabsKeepsState(t *testing.T) {
	f := newFake()
	ts, err := New(f, WithMembers(ReadPage))
	if err != nil {
		t.Fatal(err)
	}
	o, _ := runOne(t, ts, ReadPage, validArgs[ReadPage])
	if !o.Body.OK || o.Body.State == nil || len(o.Body.State.Tabs) != 1 {
		t.Fatalf("read_page output %s has no state", o.Raw)
	}
}

func TestEveryMemberRuns(t *testing.T) {
	for _, m := range AllMembers() {
		f := newFake()
		ts := newToolset(t, f)
		o, rec := runOne(t, ts, m, validArgs[m])
		if !o.Body.OK || rec.Outcome != OutcomeOK || o.Body.State == nil {
			t.Errorf("%s: output %s, record %+v", m, o.Raw, rec)
		}
		want := []string{"state", string(m), "state"}
		switch {
		case m == ListTabs:
			want = []string{"state"}
		case m == Navigate || m == NewTab:
			want = []string{"state", "policy", "confirm", string(m), "state"}
		case specByName[m].confirm:
			want = []string{"state", "confirm", string(m), "state"}
		default:
			want = []string{string(m), "state"}
		}
		if got := f.log.Entries(); !slices.Equal(got, want) {
			t.Errorf("%s: ran %v, want %v", m, got, want)
		}
		if m != ListTabs && (!rec.Attempted || len(f.received()) != 1 || f.received()[0].Member() != m) {
			t.Errorf("%s: the driver got %v", m, f.received())
		}
	}
}

func TestBusyAndClose(t *testing.T) {
	f := newFake()
	started, release := make(chan struct{}), make(chan struct{})
	f.hook = func(_ context.Context, name string) error {
		if name == string(ReadPage) {
			close(started)
			<-release
		}
		return nil
	}
	ts := newToolset(t, f)
	running, err := ts.Prepare([]Call{{CallID: "c1", Name: "read_page", Arguments: validArgs[ReadPage]}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := running.Run(context.Background())
		done <- err
	}()
	<-started
	b, err := ts.Prepare([]Call{{CallID: "x", Name: "list_tabs", Arguments: "{}"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Run(context.Background()); !errors.Is(err, ErrBusy) {
		t.Fatalf("a concurrent Run: %v, want ErrBusy", err)
	}
	_ = ts.Close()
	if s := ts.Status(); s != StatusDraining {
		t.Fatalf("status %s while a batch runs after Close, want draining", s)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the running batch: %v", err)
	}
	if s := ts.Status(); s != StatusClosed {
		t.Fatalf("status %s, want closed", s)
	}
	b, _ = ts.Prepare([]Call{{CallID: "y", Name: "list_tabs", Arguments: "{}"}})
	if _, err := b.Run(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Close: %v, want ErrClosed", err)
	}
	if _, err := b.Run(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Run after Close: %v", err)
	}
}

func TestBatchRunsOnce(t *testing.T) {
	f := newFake()
	ts := newToolset(t, f)
	b, err := ts.Prepare([]Call{{CallID: "c1", Name: "list_tabs", Arguments: "{}"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "already ran") {
		t.Fatalf("second Run: %v", err)
	}
	if got := f.log.Entries(); len(got) != 1 {
		t.Fatalf("the batch ran twice: %v", got)
	}
}
