package browser

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReportedURL(t *testing.T) {
	long := strings.Repeat("p", 5000)
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"https://example.com/form?id=7#top", "https://example.com", true},
		{"https://user:secret@example.com/account", "https://example.com", true},
		{"https://example.com:8443/x", "https://example.com:8443", true},
		{"https://example.com:443/x", "https://example.com", true},
		{"http://example.com:80/", "http://example.com", true},
		{"http://example.com:443/", "http://example.com:443", true},
		{"HTTP://Example.COM/Path", "http://example.com", true},
		{"http://[::1]:8080/a", "http://[::1]:8080", true},
		{"http://[::1]/a", "http://[::1]", true},
		{"https://example.com/" + long, "https://example.com", true},
		{"about:blank", "about:blank", true},
		{"about:blank#frag", "about:blank", true},
		{"about:srcdoc", "about:", true},
		{"data:text/html,<h1>secret</h1>", "data:", true},
		{"file:///home/agent/secret.txt", "file:", true},
		{"javascript:alert(document.cookie)", "javascript:", true},
		{"chrome://settings/passwords", "chrome:", true},
		{"blob:https://example.com/uuid", "blob:", true},
		{"", "", true},
		{"/relative/path", "", false},
		{"https://", "", false},
		{"http://[::1", "", false},
		{"https://" + strings.Repeat("a", 2100) + ".test/", "", false},
		{"\xff://x", "", false},
	}
	for _, c := range cases {
		got, err := ReportedURL(c.in)
		if c.ok != (err == nil) || got != c.want {
			t.Errorf("ReportedURL(%.60q) = %q, %v; want %q, ok %v", c.in, got, err, c.want, c.ok)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error %q shows the URL", err)
		}
	}
	// The cap applies to the reported value: 2,048 bytes pass, 2,049 do not.
	host := strings.Repeat("a", MaxURLBytes-len("https://"))
	if got, err := ReportedURL("https://" + host + "/x"); err != nil || len(got) != MaxURLBytes {
		t.Errorf("a %d-byte origin: %d bytes, %v", MaxURLBytes, len(got), err)
	}
	if _, err := ReportedURL("https://" + host + "a/x"); err == nil {
		t.Error("a 2,049-byte origin was reported")
	}
}

func TestTruncateTitle(t *testing.T) {
	ascii := strings.Repeat("a", MaxTitleBytes-1)
	cases := []struct {
		name, in, want string
		cut            bool
	}{
		{"short", "Pickup form", "Pickup form", false},
		{"exactly the limit", strings.Repeat("a", MaxTitleBytes), strings.Repeat("a", MaxTitleBytes), false},
		// é is 2 bytes: bytes 1023-1024 would split it; it goes whole.
		{"two-byte character across the limit", ascii + "é" + "tail", ascii, true},
		{"two-byte character ending at the limit", ascii[:MaxTitleBytes-2] + "é" + "z", ascii[:MaxTitleBytes-2] + "é", true},
		// 😀 is 4 bytes, starting at byte 1022.
		{"four-byte character across the limit", ascii[:MaxTitleBytes-2] + "😀", ascii[:MaxTitleBytes-2], true},
		{"all three-byte characters", strings.Repeat("日", 400), strings.Repeat("日", 341), true},
	}
	for _, c := range cases {
		got, cut := TruncateTitle(c.in)
		if got != c.want || cut != c.cut {
			t.Errorf("%s: %d bytes, cut %v; want %d bytes, cut %v", c.name, len(got), cut, len(c.want), c.cut)
		}
		if !utf8.ValidString(got) || len(got) > MaxTitleBytes {
			t.Errorf("%s: result is not valid UTF-8 within the limit", c.name)
		}
	}
}

func TestStateNormalization(t *testing.T) {
	longTitle := strings.Repeat("a", MaxTitleBytes-1) + "ü and more"
	v1, err := normalizeState(State{Version: StateV1, Tabs: []Tab{
		{ID: "a", Title: longTitle, URL: "https://u:p@example.com:8443/p?q#f", Active: true},
		{ID: "b", Title: "Blank", URL: "about:blank"},
		{ID: "c", Title: "Local", URL: "file:///etc/passwd"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Tab{
		{ID: "a", Title: strings.Repeat("a", MaxTitleBytes-1), URL: "https://example.com:8443", Active: true, TitleTruncated: true},
		{ID: "b", Title: "Blank", URL: "about:blank"},
		{ID: "c", Title: "Local", URL: "file:"},
	}
	for i := range want {
		if v1.Tabs[i] != want[i] {
			t.Errorf("tab %d: %+v, want %+v", i, v1.Tabs[i], want[i])
		}
	}
	// A legacy state (no observation metadata) keeps its titles whole.
	legacy, err := normalizeState(State{Tabs: []Tab{{ID: "a", Title: longTitle, URL: "data:text/plain,x", TitleTruncated: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := legacy.Tabs[0]; got.Title != longTitle || got.TitleTruncated || got.URL != "data:" {
		t.Errorf("legacy tab %+v", got)
	}
	bad := []struct {
		name string
		s    State
	}{
		{"unknown version", State{Version: 2}},
		{"duplicate ids", State{Tabs: []Tab{{ID: "a"}, {ID: "a"}}}},
		{"two active tabs", State{Tabs: []Tab{{ID: "a", Active: true}, {ID: "b", Active: true}}}},
		{"title not UTF-8", State{Tabs: []Tab{{ID: "a", Title: "\xff"}}}},
		{"id not UTF-8", State{Tabs: []Tab{{ID: "\xfe"}}}},
		{"relative url", State{Tabs: []Tab{{ID: "a", URL: "form.html"}}}},
	}
	for _, c := range bad {
		if _, err := normalizeState(c.s); !errors.Is(err, ErrInvalidState) {
			t.Errorf("%s: %v, want ErrInvalidState", c.name, err)
		}
	}
	if s, err := normalizeState(State{}); err != nil || s.Tabs == nil {
		t.Errorf("no tabs: %+v, %v; want an empty list", s, err)
	}
}

// TestOutputStateIsReduced checks what the model sees: the state of the
// output has the origin, not the page's path, query, fragment or
// credentials, and a V1 title cut on a character boundary.
func TestOutputStateIsReduced(t *testing.T) {
	f := newFake()
	title := strings.Repeat("x", MaxTitleBytes-1) + "ø"
	f.state = State{Version: StateV1, Tabs: []Tab{{ID: "t1", Title: title, URL: "https://alice:pw@shop.test/cart?token=abc#pay", Active: true}}}
	ts := newToolset(t, f)
	o, _ := runOne(t, ts, ListTabs, `{}`)
	if strings.Contains(o.Raw, "alice") || strings.Contains(o.Raw, "token") || strings.Contains(o.Raw, "cart") {
		t.Fatalf("the output leaks URL parts: %s", o.Raw)
	}
	tab := o.Body.State.Tabs[0]
	if tab.URL != "https://shop.test" || len(tab.Title) != MaxTitleBytes-1 || !tab.TitleTruncated || !o.has("state") {
		t.Fatalf("tab %+v", tab)
	}
	if !strings.Contains(o.Raw, `"title_truncated":true`) {
		t.Fatalf("the output does not say the title was cut: %s", o.Raw)
	}
}
