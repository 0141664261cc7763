package form

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func newServer(t *testing.T) *RecordServer {
	t.Helper()
	s, err := NewRecordServer(filepath.Join(t.TempDir(), "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// noRedirect lets a test see the server's own answer to a POST.
var noRedirect = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

type req struct {
	method, path, contentType, origin, host, body string
}

func (s *RecordServer) do(t *testing.T, r req) (int, string) {
	t.Helper()
	hr, err := http.NewRequest(r.method, strings.TrimSuffix(s.URL(), "/")+r.path, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if r.contentType != "" {
		hr.Header.Set("Content-Type", r.contentType)
	}
	if r.origin != "" {
		hr.Header.Set("Origin", r.origin)
	}
	if r.host != "" {
		hr.Host = r.host
	}
	resp, err := noRedirect.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

const formType = "application/x-www-form-urlencoded"

func submit(t *testing.T, s *RecordServer, vals url.Values) (int, string) {
	t.Helper()
	return s.do(t, req{method: "POST", path: "/submit", contentType: formType,
		origin: strings.TrimSuffix(s.URL(), "/"), body: vals.Encode()})
}

func TestSubmitAppendsExactlyOneRecord(t *testing.T) {
	s := newServer(t)
	name := "Zoë Ñúñez-Łukasz"
	status, _ := submit(t, s, url.Values{"name": {name}, "date": {"2025-03-14"}, "slot": {"Afternoon"}, "fragile": {"yes"}})
	if status != http.StatusSeeOther {
		t.Fatalf("submit: status %d, want 303", status)
	}
	recs, err := s.Records()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1: %+v", len(recs), recs)
	}
	r := recs[0]
	if r.Name != name || r.Date != "2025-03-14" || r.Slot != "Afternoon" || !r.Fragile {
		t.Fatalf("record %+v", r)
	}
	if time.Since(r.SavedAt) > time.Minute || r.SavedAt.Location() != time.UTC {
		t.Errorf("saved_at %v", r.SavedAt)
	}
	raw, _ := os.ReadFile(s.RecordFile())
	if strings.Count(string(raw), "\n") != 1 || !strings.Contains(string(raw), `"name":"Zoë Ñúñez-Łukasz"`) {
		t.Errorf("record file is not one JSON line with the name as UTF-8:\n%s", raw)
	}

	// The confirmation page shows the name intact.
	status, page := s.do(t, req{method: "GET", path: "/saved"})
	if status != http.StatusOK || !strings.Contains(page, "Saved") || !strings.Contains(page, name) {
		t.Errorf("saved page (%d):\n%s", status, page)
	}

	// Without the checkbox, fragile is false; the first record stays.
	status, _ = submit(t, s, url.Values{"name": {"Bob"}, "date": {"2024-02-29"}, "slot": {"Evening"}})
	if status != http.StatusSeeOther {
		t.Fatalf("second submit: status %d", status)
	}
	recs, err = s.Records()
	if err != nil || len(recs) != 2 || recs[0] != r || recs[1].Fragile || recs[1].Name != "Bob" {
		t.Fatalf("records after a second submission: %+v, %v", recs, err)
	}
}

func TestRejectsAnythingButTheForm(t *testing.T) {
	s := newServer(t)
	origin := strings.TrimSuffix(s.URL(), "/")
	good := url.Values{"name": {"Ann"}, "date": {"2025-01-02"}, "slot": {"Morning"}}
	with := func(k, v string) string {
		vals := url.Values{}
		for gk, gv := range good {
			vals[gk] = gv
		}
		if v == "" {
			delete(vals, k)
		} else {
			vals.Set(k, v)
		}
		return vals.Encode()
	}
	post := func(body string) req {
		return req{method: "POST", path: "/submit", contentType: formType, origin: origin, body: body}
	}
	cases := map[string]struct {
		r    req
		want int
	}{
		"GET /submit":      {req{method: "GET", path: "/submit"}, 405},
		"PUT /":            {req{method: "PUT", path: "/"}, 405},
		"POST /":           {req{method: "POST", path: "/", contentType: formType, origin: origin, body: good.Encode()}, 405},
		"DELETE /saved":    {req{method: "DELETE", path: "/saved"}, 405},
		"unknown path":     {req{method: "GET", path: "/admin"}, 404},
		"favicon":          {req{method: "GET", path: "/favicon.ico"}, 404},
		"json body":        {req{method: "POST", path: "/submit", contentType: "application/json", origin: origin, body: `{"name":"Ann"}`}, 400},
		"latin-1 charset":  {req{method: "POST", path: "/submit", contentType: formType + "; charset=iso-8859-1", origin: origin, body: good.Encode()}, 400},
		"cross origin":     {req{method: "POST", path: "/submit", contentType: formType, origin: "http://evil.example", body: good.Encode()}, 403},
		"wrong host":       {req{method: "POST", path: "/submit", contentType: formType, host: "evil.example", body: good.Encode()}, 421},
		"query string":     {req{method: "POST", path: "/submit?x=1", contentType: formType, origin: origin, body: good.Encode()}, 400},
		"unknown field":    {post(good.Encode() + "&admin=1"), 400},
		"field twice":      {post(good.Encode() + "&slot=Evening"), 400},
		"no name":          {post(with("name", "")), 400},
		"blank name":       {post(with("name", "   ")), 400},
		"control in name":  {post(with("name", "Ann\nBob")), 400},
		"invalid UTF-8":    {post("name=%FF%FE&date=2025-01-02&slot=Morning"), 400},
		"long name":        {post(with("name", strings.Repeat("é", maxNameRunes+1))), 400},
		"no date":          {post(with("date", "")), 400},
		"date format":      {post(with("date", "14.03.2025")), 400},
		"impossible date":  {post(with("date", "2025-02-30")), 400},
		"unknown slot":     {post(with("slot", "Night")), 400},
		"no slot":          {post(with("slot", "")), 400},
		"fragile=on":       {post(with("fragile", "on")), 400},
		"oversized body":   {post(with("name", "Ann") + "&pad=" + strings.Repeat("x", maxFormBytes)), 400},
		"report not JSON":  {req{method: "POST", path: "/loaded", contentType: formType, origin: origin, body: "a=1"}, 415},
		"report malformed": {req{method: "POST", path: "/loaded", contentType: "application/json", origin: origin, body: `{"nope":1}`}, 400},
	}
	for name, c := range cases {
		if status, body := s.do(t, c.r); status != c.want {
			t.Errorf("%s: status %d, want %d: %s", name, status, c.want, body)
		}
	}
	if recs, err := s.Records(); err != nil || len(recs) != 0 {
		t.Fatalf("refused requests saved something: %+v, %v", recs, err)
	}
	// The happy path still works after all that.
	if status, _ := submit(t, s, good); status != http.StatusSeeOther {
		t.Fatalf("good submission: %d", status)
	}
}

func TestFormPage(t *testing.T) {
	s := newServer(t)
	resp, err := http.Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("CSP %q", resp.Header.Get("Content-Security-Policy"))
	}
	page := string(body)
	for _, want := range []string{
		`<meta charset="utf-8">`, `accept-charset="utf-8"`,
		`id="name" name="name" type="text"`, `id="date" name="date" type="text"`, `placeholder="YYYY-MM-DD"`,
		`id="slot" name="slot" size="3"`, `<option value="Afternoon">Afternoon</option>`,
		`id="fragile" name="fragile" type="checkbox" value="yes"`, `id="submit" type="submit"`,
		"#name { left: 40px; top: 140px; width: 560px; height: 64px; }",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("form page lacks %q", want)
		}
	}
}

func TestPageReport(t *testing.T) {
	s := newServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.PageLoaded(ctx); err == nil {
		t.Fatal("PageLoaded returned before any report")
	}
	if status, body := s.do(t, req{method: "POST", path: "/loaded", contentType: "application/json", body: LayoutReport}); status != 204 {
		t.Fatalf("report: %d %s", status, body)
	}
	rep, err := s.PageLoaded(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var want PageReport
	if err := json.Unmarshal([]byte(LayoutReport), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep, want) {
		t.Fatalf("PageLoaded = %+v, want what the page reported, %+v", rep, want)
	}
}

func TestReadRecordsRejectsMalformedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	if err := os.WriteFile(path, []byte(`{"name":"a","date":"2025-01-01","slot":"Morning","fragile":false,"saved_at":"2025-01-01T00:00:00Z"}`+"\n{oops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRecords(path); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("ReadRecords: %v", err)
	}
}
