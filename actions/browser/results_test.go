package browser

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func el(ref, label string, role Role) Element { return Element{Ref: ref, Label: label, Role: role} }

func read(elements ...Element) *BrowserReadV1 {
	return &BrowserReadV1{Version: 1, Text: "Pickup", Elements: elements}
}

// TestInvalidResultsStopTheRun is the table of result rules: each invalid
// result stops the run before the final state is read.
func TestInvalidResultsStopTheRun(t *testing.T) {
	b := strings.Repeat
	cases := []struct {
		name string
		m    Member
		res  any
	}{
		{"version 0", ReadPage, ReadResult{Read: &BrowserReadV1{}}},
		{"version 2", Find, ReadResult{Read: &BrowserReadV1{Version: 2}}},
		{"text and read", ReadPage, ReadResult{Text: Text("x"), Read: read()}},
		{"text not UTF-8", ReadPage, TextRead("\xff")},
		{"read text not UTF-8", ReadPage, ReadResult{Read: &BrowserReadV1{Version: 1, Text: "\xc3"}}},
		{"duplicate ref", ReadPage, ReadResult{Read: read(el("e1", "Name", RoleTextbox), el("e1", "Go", RoleButton))}},
		{"empty ref", ReadPage, ReadResult{Read: read(el("", "Name", RoleTextbox))}},
		{"257-byte ref", ReadPage, ReadResult{Read: read(el(b("r", 257), "Name", RoleTextbox))}},
		{"empty label", ReadPage, ReadResult{Read: read(el("e1", "", RoleButton))}},
		{"257-byte label", ReadPage, ReadResult{Read: read(el("e1", b("l", 257), RoleButton))}},
		{"label not UTF-8", ReadPage, ReadResult{Read: read(el("e1", "\xff", RoleButton))}},
		{"unknown role", ReadPage, ReadResult{Read: read(el("e1", "Link", "link"))}},
		{"513-byte value", ReadPage, ReadResult{Read: read(Element{Ref: "e1", Label: "Note", Role: RoleTextbox, Value: ptr(b("v", 513))})}},
		{"value not UTF-8", ReadPage, ReadResult{Read: read(Element{Ref: "e1", Label: "Note", Role: RoleTextbox, Value: ptr("\xff")})}},
		{"257-byte option label", ReadPage, ReadResult{Read: read(Element{Ref: "e1", Label: "City", Role: RoleCombobox,
			Options: []ElementOption{{Label: b("o", 257), Value: "x"}}})}},
		{"513-byte option value", ReadPage, ReadResult{Read: read(Element{Ref: "e1", Label: "City", Role: RoleListbox,
			Options: []ElementOption{{Label: "Oslo", Value: b("v", 513)}}})}},
		{"unknown omitted code", ReadPage, ReadResult{Read: &BrowserReadV1{Version: 1, Omitted: []Omitted{"too_big"}}}},
		{"repeated omitted code", ReadPage, ReadResult{Read: &BrowserReadV1{Version: 1, Omitted: []Omitted{OmittedPrivate, OmittedPrivate}}}},
		{"get_page_text with elements", GetPageText, ReadResult{Read: read(el("e1", "Go", RoleButton))}},
		{"scoped nil", ReadPageScoped, (*BrowserScopedReadV1)(nil)},
		{"scoped empty scope ref", ReadPageScoped, &BrowserScopedReadV1{BrowserReadV1: *read(), Scopes: []Scope{{Ref: "", Label: "Main"}}}},
		{"scoped empty scope label", ReadPageScoped, &BrowserScopedReadV1{BrowserReadV1: *read(), Scopes: []Scope{{Ref: "s1", Label: ""}}}},
		{"scoped 257-byte scope label", ReadPageScoped, &BrowserScopedReadV1{BrowserReadV1: *read(), Scopes: []Scope{{Ref: "s1", Label: b("l", 257)}}}},
		{"scoped duplicate scope ref", ReadPageScoped, &BrowserScopedReadV1{BrowserReadV1: *read(),
			Scopes: []Scope{{Ref: "s1", Label: "Main"}, {Ref: "s1", Label: "Footer"}}}},
		{"scope ref equal to an element ref", ReadPageScoped, &BrowserScopedReadV1{BrowserReadV1: *read(el("e1", "Go", RoleButton)),
			Scopes: []Scope{{Ref: "e1", Label: "Main"}}}},
		{"scoped bad element", ReadPageScoped, &BrowserScopedReadV1{BrowserReadV1: *read(el("e1", "", RoleButton))}},
		{"diagnostics nil", ReadDiagnostics, (*BrowserReadV1)(nil)},
		{"diagnostics with elements", ReadDiagnostics, read(el("e1", "Go", RoleButton))},
		{"script not UTF-8", RunScript, "\xff"},
		{"action text not UTF-8", Click, Text("\xff")},
		{"image without a source", Screenshot, Image{Detail: ptr(DetailHigh)}},
		{"image with an empty url", Screenshot, Image{ImageURL: Text("")}},
		{"image with an empty file id", Zoom, Image{ImageURL: Text("data:image/png;base64,AA=="), FileID: Text("")}},
		{"image detail", Screenshot, Image{FileID: Text("file-1"), Detail: ptr(ImageDetail("ultra"))}},
		{"image breakpoint", Screenshot, Image{FileID: Text("file-1"), PromptCacheBreakpoint: &CacheBreakpoint{Mode: "implicit"}}},
		{"file version", UploadFile, BrowserFileOutcome{Version: 2, Status: FileCompleted, Effect: EffectCompleted, Cleanup: CleanupCompleted}},
		{"file completed/none", UploadFile, BrowserFileOutcome{Version: 1, Status: FileCompleted, Effect: EffectNone, Cleanup: CleanupCompleted}},
		{"file refused/unknown", UploadFile, BrowserFileOutcome{Version: 1, Status: FileRefused, Effect: EffectUnknown, Cleanup: CleanupCompleted}},
		{"file unknown/none", DownloadFile, BrowserFileOutcome{Version: 1, Status: FileUnknown, Effect: EffectNone, Cleanup: CleanupPending}},
		{"file interrupted/completed", DownloadFile, BrowserFileOutcome{Version: 1, Status: FileInterrupted, Effect: EffectCompleted, Cleanup: CleanupPending}},
		{"file unknown status", DownloadFile, BrowserFileOutcome{Version: 1, Status: "partial", Effect: EffectUnknown, Cleanup: CleanupPending}},
		{"file cleanup", DownloadFile, BrowserFileOutcome{Version: 1, Status: FileRefused, Effect: EffectNone, Cleanup: "done"}},
		{"file zero", DownloadFile, BrowserFileOutcome{}},
	}
	for _, c := range cases {
		f := newFake()
		f.results[c.m] = c.res
		ts := newToolset(t, f)
		_, res, err := runCalls(t, ts, [2]string{string(c.m), validArgs[c.m]}, [2]string{"list_tabs", `{}`})
		var se *StopError
		if !errors.As(err, &se) || !errors.Is(err, ErrInvalidResult) || se.CallID != "c1" || !se.Attempted {
			t.Errorf("%s: Run error %v, want a StopError for c1 matching ErrInvalidResult", c.name, err)
			continue
		}
		if log := f.log.Entries(); log[len(log)-1] != string(c.m) {
			t.Errorf("%s: ran %v; nothing may follow an invalid result, not even the state read", c.name, log)
		}
		if len(res.Outputs) != 0 || len(res.Calls) != 1 || res.Calls[0].Outcome != OutcomeStopped || !res.Calls[0].Attempted {
			t.Errorf("%s: %d outputs, records %+v", c.name, len(res.Outputs), res.Calls)
		}
	}
}

// TestStructuredReadCopy checks what a valid read looks like to the model:
// fields kept only on the roles that may carry them, limits at the edge
// accepted, arrays present.
func TestStructuredReadCopy(t *testing.T) {
	f := newFake()
	f.results[ReadPage] = StructuredRead(BrowserReadV1{Version: 1, Text: "Pickup form",
		Elements: []Element{
			{Ref: strings.Repeat("r", 256), Label: strings.Repeat("l", 256), Role: RoleTextbox, Value: ptr(strings.Repeat("v", 512))},
			{Ref: "b", Label: "Submit", Role: RoleButton, Value: ptr("secret"), Checked: ptr(true),
				Options: []ElementOption{{Label: "x", Value: "y"}}},
			{Ref: "c", Label: "Agree", Role: RoleCheckbox, Checked: ptr(false), Value: ptr("on")},
			{Ref: "d", Label: "City", Role: RoleCombobox, Value: ptr("oslo"),
				Options: []ElementOption{{Label: "Oslo", Value: "oslo", Selected: ptr(true)}}},
			{Ref: "e", Label: "Days", Role: RoleListbox,
				Options: []ElementOption{{Label: "Mon", Value: "1", Selected: ptr(true)}, {Label: "Tue", Value: "2", Selected: ptr(false)}}},
			{Ref: "f", Label: "Plan", Role: RoleRadio, Checked: ptr(true)},
			{Ref: "g", Label: "Volume", Role: RoleSlider, Value: ptr("7")},
		},
		Omitted: []Omitted{OmittedPrivate, OmittedValue},
	})
	ts := newToolset(t, f)
	o, _ := runOne(t, ts, ReadPage, validArgs[ReadPage])
	var got BrowserReadV1
	if err := json.Unmarshal(o.Body.Result, &got); err != nil {
		t.Fatalf("result %s: %v", o.Body.Result, err)
	}
	want := `{"version":1,"text":"Pickup form","elements":[` +
		`{"ref":"` + strings.Repeat("r", 256) + `","label":"` + strings.Repeat("l", 256) + `","role":"textbox","value":"` + strings.Repeat("v", 512) + `"},` +
		`{"ref":"b","label":"Submit","role":"button"},` +
		`{"ref":"c","label":"Agree","role":"checkbox","checked":false},` +
		`{"ref":"d","label":"City","role":"combobox","value":"oslo","options":[{"label":"Oslo","value":"oslo"}]},` +
		`{"ref":"e","label":"Days","role":"listbox","options":[{"label":"Mon","value":"1","selected":true},{"label":"Tue","value":"2","selected":false}]},` +
		`{"ref":"f","label":"Plan","role":"radio","checked":true},` +
		`{"ref":"g","label":"Volume","role":"slider","value":"7"}],` +
		`"omitted":["private","value"]}`
	if string(o.Body.Result) != want {
		t.Fatalf("result\n %s\nwant\n %s", o.Body.Result, want)
	}
	if strings.Contains(o.Raw, "secret") {
		t.Fatal("a button's value reached the model")
	}

	// No result: only the updated state. Empty text: "".
	f = newFake()
	ts = newToolset(t, f)
	o, _ = runOne(t, ts, Find, validArgs[Find])
	if string(o.Body.Result) != "null" || o.Body.State == nil {
		t.Fatalf("no result: %s", o.Raw)
	}
	f.results[GetPageText] = TextRead("")
	o, _ = runOne(t, ts, GetPageText, validArgs[GetPageText])
	if string(o.Body.Result) != `""` {
		t.Fatalf("empty text: %s", o.Raw)
	}
	// A structured read always has its arrays, and a string stays a string.
	f.results[GetPageText] = StructuredRead(BrowserReadV1{Version: 1, Text: "All the text"})
	o, _ = runOne(t, ts, GetPageText, validArgs[GetPageText])
	if string(o.Body.Result) != `{"version":1,"text":"All the text","elements":[],"omitted":[]}` {
		t.Fatalf("text-only read: %s", o.Body.Result)
	}
	f.results[ReadPage] = TextRead(`{"version":1}`)
	o, _ = runOne(t, ts, ReadPage, validArgs[ReadPage])
	if string(o.Body.Result) != `"{\"version\":1}"` {
		t.Fatalf("a string was not kept as text: %s", o.Body.Result)
	}
}

// TestResultCopiedBeforeState checks a read is copied before the final
// state is asked for: a driver changing its read in the state reader does
// not change what the model sees.
func TestResultCopiedBeforeState(t *testing.T) {
	f := newFake()
	scoped := &BrowserScopedReadV1{BrowserReadV1: *read(el("e1", "Name", RoleTextbox)), Scopes: []Scope{{Ref: "s1", Label: "Main"}}}
	f.results[ReadPageScoped] = scoped
	f.hook = func(_ context.Context, name string) error {
		if name == "state" {
			scoped.Elements[0].Label = "changed"
			scoped.Scopes[0].Ref = "e1"
			scoped.Text = "changed"
		}
		return nil
	}
	ts := newToolset(t, f)
	o, _ := runOne(t, ts, ReadPageScoped, validArgs[ReadPageScoped])
	want := `{"version":1,"text":"Pickup","elements":[{"ref":"e1","label":"Name","role":"textbox"}],"omitted":[],"scopes":[{"ref":"s1","label":"Main"}]}`
	if string(o.Body.Result) != want {
		t.Fatalf("result %s, want %s", o.Body.Result, want)
	}
}

func TestImages(t *testing.T) {
	cases := []struct {
		name string
		img  Image
		want map[string]any
	}{
		{"data url", Image{ImageURL: Text("data:image/png;base64,AA==")},
			map[string]any{"image_url": "data:image/png;base64,AA=="}},
		{"file id with detail", Image{FileID: Text("file-1"), Detail: ptr(DetailOriginal)},
			map[string]any{"file_id": "file-1", "detail": "original"}},
		{"both sources and a breakpoint", Image{ImageURL: Text("https://img.test/a.png"), FileID: Text("file-2"), Detail: ptr(DetailLow),
			PromptCacheBreakpoint: &CacheBreakpoint{Mode: "explicit"}},
			map[string]any{"image_url": "https://img.test/a.png", "file_id": "file-2", "detail": "low",
				"prompt_cache_breakpoint": map[string]any{"mode": "explicit"}}},
	}
	for _, c := range cases {
		for _, m := range []Member{Screenshot, Zoom} {
			f := newFake()
			f.results[m] = c.img
			ts := newToolset(t, f)
			o, _ := runOne(t, ts, m, validArgs[m])
			if o.Image == nil || !o.Body.OK || o.Body.State == nil || o.has("result") {
				t.Fatalf("%s %s: output %s, image %v", c.name, m, o.Raw, o.Image)
			}
			if mustJSON(t, o.Image) != mustJSON(t, c.want) {
				t.Errorf("%s %s: image %s, want %s", c.name, m, mustJSON(t, o.Image), mustJSON(t, c.want))
			}
		}
	}
}

func TestFileOutcomes(t *testing.T) {
	cases := []struct {
		status FileStatus
		effect FileEffect
		ok     bool
	}{
		{FileCompleted, EffectCompleted, true},
		{FileRefused, EffectNone, false},
		{FileUnknown, EffectUnknown, false},
		{FileInterrupted, EffectNone, false},
		{FileInterrupted, EffectUnknown, false},
	}
	for _, c := range cases {
		for _, cleanup := range []FileCleanup{CleanupNotStarted, CleanupPending, CleanupCompleted} {
			for _, m := range []Member{UploadFile, DownloadFile} {
				f := newFake()
				outcome := BrowserFileOutcome{Version: 1, Status: c.status, Effect: c.effect, Cleanup: cleanup}
				f.results[m] = outcome
				ts := newToolset(t, f)
				outs, res, err := runCalls(t, ts, [2]string{string(m), validArgs[m]}, [2]string{"click", validArgs[Click]},
					[2]string{"list_tabs", `{}`})
				if err != nil {
					t.Fatalf("%s %+v: %v", m, outcome, err)
				}
				var got BrowserFileOutcome
				if err := json.Unmarshal(outs[0].Body.Result, &got); err != nil || got != outcome {
					t.Errorf("%s %+v: result %s", m, outcome, outs[0].Body.Result)
				}
				if outs[0].Body.OK != c.ok || outs[0].Body.State == nil {
					t.Errorf("%s %+v: output %s, want ok %v with state", m, outcome, outs[0].Raw, c.ok)
				}
				ranClick := slices.Contains(f.log.Entries(), "click")
				if ranClick != c.ok {
					t.Errorf("%s %+v: the next browser call ran: %v", m, outcome, ranClick)
				}
				if !c.ok && (res.Calls[0].Outcome != OutcomeFileNotCompleted || res.Calls[1].Outcome != OutcomeSkipped ||
					res.Calls[2].Outcome != OutcomeSkipped || !strings.Contains(outs[1].Body.Error, "Skipped")) {
					t.Errorf("%s %+v: records %+v", m, outcome, res.Calls)
				}
			}
		}
	}
}
