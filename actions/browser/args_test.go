package browser

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestValidArgumentsDecode checks every member's valid example decodes to
// the expected typed arguments.
func TestValidArgumentsDecode(t *testing.T) {
	want := map[Member]Arguments{
		Navigate:        NavigateArgs{URL: "https://example.com/next"},
		ReadPage:        ReadPageArgs{Filter: FilterInteractive},
		GetPageText:     GetPageTextArgs{TabID: Text("t1")},
		Find:            FindArgs{Query: "Submit"},
		Click:           ClickArgs{Target: "e1"},
		Type:            TypeArgs{Text: "Zoë", Target: Text("e2")},
		Key:             KeyArgs{Keys: []string{"Enter"}},
		Scroll:          ScrollArgs{Direction: DirectionDown, Amount: 300},
		ScrollTo:        ScrollToArgs{Target: "e3"},
		WaitFor:         WaitForArgs{Text: "Saved", TimeoutMS: 1000},
		SelectOption:    SelectOptionArgs{Target: "e4", Values: []string{"oslo"}},
		Hover:           HoverArgs{Target: "e5"},
		Screenshot:      ScreenshotArgs{},
		Zoom:            ZoomArgs{Region: [4]int64{0, 0, 100, 50}},
		NewTab:          NewTabArgs{URL: Text("https://example.com/")},
		ListTabs:        ListTabsArgs{},
		SwitchTab:       SwitchTabArgs{TabID: "t1"},
		CloseTab:        CloseTabArgs{TabID: "t1"},
		ReadPageScoped:  ReadPageScopedArgs{Depth: 4, Filter: FilterAll},
		ClickAt:         ClickAtArgs{X: 10, Y: 20, Button: ButtonLeft, ClickCount: 2, Keys: []Modifier{ModifierShift}},
		DragPath:        DragPathArgs{Path: []Point{{1, 2}, {30, 40}}, Keys: []Modifier{}},
		HoldKeys:        HoldKeysArgs{Keys: []string{"Shift"}, DurationMS: 500},
		HoverAt:         HoverAtArgs{X: 5, Y: 6},
		SetChecked:      SetCheckedArgs{Target: "e6", Checked: true},
		ReadDiagnostics: ReadDiagnosticsArgs{Source: SourceConsole, Limit: 10},
		RunScript:       RunScriptArgs{Source: "document.title", TimeoutMS: 1000},
		UploadFile:      UploadFileArgs{GrantID: "g-1"},
		DownloadFile:    DownloadFileArgs{GrantID: "g-2"},
	}
	if len(want) != len(AllMembers()) || len(validArgs) != len(AllMembers()) {
		t.Fatalf("the tables cover %d and %d members, want all %d", len(want), len(validArgs), len(AllMembers()))
	}
	for _, m := range AllMembers() {
		got, err := DecodeArguments(m, []byte(validArgs[m]))
		if err != nil {
			t.Errorf("%s %s: %v", m, validArgs[m], err)
			continue
		}
		if !reflect.DeepEqual(got, want[m]) {
			t.Errorf("%s: decoded %#v, want %#v", m, got, want[m])
		}
		if got.Member() != m {
			t.Errorf("%s: arguments say member %s", m, got.Member())
		}
	}
}

func repeatJSON(item string, n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
}

func keysJSON(n int) string {
	var ks []string
	for i := range n {
		ks = append(ks, `"K`+string(rune('a'+i))+`"`)
	}
	return "[" + strings.Join(ks, ",") + "]"
}

func points(n int) string { return repeatJSON(`{"x":1,"y":1}`, n) }

// TestArgumentValidation is the table of every argument rule: each case is
// accepted or refused naming the field.
func TestArgumentValidation(t *testing.T) {
	b := func(n int) string { return strings.Repeat("a", n) }
	cases := []struct {
		m     Member
		args  string
		field string // "" with ok: accepted
		ok    bool
		why   string // part of the reason, when refused
	}{
		// The arguments as a whole.
		{ReadPage, `[]`, "", false, "must be a JSON object"},
		{ReadPage, `null`, "", false, "must be a JSON object"},
		{ReadPage, `{"filter":"all","tab_id":null`, "", false, "invalid JSON"},
		{ReadPage, `{"filter":"all","tab_id":null} x`, "", false, "after the value"},
		{ReadPage, `{"filter":"all","filter":"all","tab_id":null}`, "", false, "duplicate field"},
		{ReadPage, `{"filter":"all","tab_id":null,"extra":1}`, "extra", false, "unknown field"},
		{ReadPage, `{"filter":"all"}`, "tab_id", false, "missing"},
		{ListTabs, `{}`, "", true, ""},
		{ListTabs, `{"tab_id":null}`, "tab_id", false, "unknown field"},
		// tab_id: a string or null, except switch_tab and close_tab.
		{Screenshot, `{"tab_id":"t9"}`, "", true, ""},
		{Screenshot, `{"tab_id":7}`, "tab_id", false, "string or null"},
		{SwitchTab, `{"tab_id":null}`, "tab_id", false, "must be a string"},
		{CloseTab, `{"tab_id":null}`, "tab_id", false, "must be a string"},
		// Valid Unicode only.
		{Find, `{"query":"\ud800","tab_id":null}`, "", false, "lone high surrogate"},
		{Find, `{"query":"\udc00","tab_id":null}`, "", false, "lone low surrogate"},
		{Find, "{\"query\":\"\xff\",\"tab_id\":null}", "", false, "invalid UTF-8"},
		{Find, `{"query":"\ud83d\ude00","tab_id":null}`, "", true, ""},
		// navigate and new_tab: an absolute URL; new_tab's may be null.
		{Navigate, `{"url":"/relative","tab_id":null}`, "url", false, "absolute"},
		{Navigate, `{"url":null,"tab_id":null}`, "url", false, "must be a string"},
		{Navigate, `{"url":"http://[::1","tab_id":null}`, "url", false, "not a URL"},
		{NewTab, `{"url":null}`, "", true, ""},
		{NewTab, `{"url":"example.com"}`, "url", false, "absolute"},
		// Enumerations.
		{ReadPage, `{"filter":"visible","tab_id":null}`, "filter", false, "all, interactive"},
		{Scroll, `{"direction":"forward","amount":1,"tab_id":null}`, "direction", false, "up, down, left, right"},
		// Safe integers; booleans are not numbers.
		{Scroll, `{"direction":"up","amount":0,"tab_id":null}`, "", true, ""},
		{Scroll, `{"direction":"up","amount":-1,"tab_id":null}`, "amount", false, "at least 0"},
		{Scroll, `{"direction":"up","amount":1.5,"tab_id":null}`, "amount", false, "safe integer"},
		{Scroll, `{"direction":"up","amount":1.0,"tab_id":null}`, "", true, ""},
		{Scroll, `{"direction":"up","amount":1e2,"tab_id":null}`, "", true, ""},
		{Scroll, `{"direction":"up","amount":9007199254740991,"tab_id":null}`, "", true, ""},
		{Scroll, `{"direction":"up","amount":9007199254740992,"tab_id":null}`, "amount", false, "safe integer"},
		{Scroll, `{"direction":"up","amount":1e400,"tab_id":null}`, "amount", false, "safe integer"},
		{Scroll, `{"direction":"up","amount":0.99999999999999999999,"tab_id":null}`, "amount", false, "safe integer"},
		{Scroll, `{"direction":"up","amount":true,"tab_id":null}`, "amount", false, "a boolean is not a number"},
		{Scroll, `{"direction":"up","amount":"5","tab_id":null}`, "amount", false, "must be an integer"},
		// wait_for: 1 to 256 bytes after whitespace normalisation; 1 to 30,000 ms.
		{WaitFor, `{"text":"` + b(256) + `","timeout_ms":1,"tab_id":null}`, "", true, ""},
		{WaitFor, `{"text":"` + b(257) + `","timeout_ms":1,"tab_id":null}`, "text", false, "over 256"},
		{WaitFor, `{"text":"  ` + b(128) + `\n\t\n ` + b(127) + `  ","timeout_ms":1,"tab_id":null}`, "", true, ""},
		{WaitFor, `{"text":" \n\t ","timeout_ms":1,"tab_id":null}`, "text", false, "must not be empty"},
		{WaitFor, `{"text":"x","timeout_ms":0,"tab_id":null}`, "timeout_ms", false, "from 1 to 30000"},
		{WaitFor, `{"text":"x","timeout_ms":30000,"tab_id":null}`, "", true, ""},
		{WaitFor, `{"text":"x","timeout_ms":30001,"tab_id":null}`, "timeout_ms", false, "from 1 to 30000"},
		// zoom: [left, top, right, bottom], non-negative, positive size.
		{Zoom, `{"region":[0,0,100],"tab_id":null}`, "region", false, "not 3"},
		{Zoom, `{"region":[0,0,0,10],"tab_id":null}`, "region", false, "positive width and height"},
		{Zoom, `{"region":[0,10,5,10],"tab_id":null}`, "region", false, "positive width and height"},
		{Zoom, `{"region":[-1,0,5,10],"tab_id":null}`, "region[0]", false, "at least 0"},
		{Zoom, `{"region":[0,0,5,false],"tab_id":null}`, "region[3]", false, "boolean"},
		// read_page_scoped: root null or 1 to 256 bytes; depth 1 to 32.
		{ReadPageScoped, `{"tab_id":null,"root":"","depth":1,"filter":"all"}`, "root", false, "must not be empty"},
		{ReadPageScoped, `{"tab_id":null,"root":"` + b(256) + `","depth":1,"filter":"all"}`, "", true, ""},
		{ReadPageScoped, `{"tab_id":null,"root":"` + b(257) + `","depth":1,"filter":"all"}`, "root", false, "over 256"},
		{ReadPageScoped, `{"tab_id":null,"root":null,"depth":0,"filter":"all"}`, "depth", false, "from 1 to 32"},
		{ReadPageScoped, `{"tab_id":null,"root":null,"depth":32,"filter":"all"}`, "", true, ""},
		{ReadPageScoped, `{"tab_id":null,"root":null,"depth":33,"filter":"all"}`, "depth", false, "from 1 to 32"},
		{ReadPageScoped, `{"tab_id":null,"root":null,"depth":3}`, "filter", false, "missing"},
		// click_at: button, click_count 1 to 3, unique modifiers.
		{ClickAt, `{"tab_id":null,"x":0,"y":0,"button":"back","click_count":1,"keys":[]}`, "button", false, "left, right, middle"},
		{ClickAt, `{"tab_id":null,"x":0,"y":0,"button":"left","click_count":0,"keys":[]}`, "click_count", false, "from 1 to 3"},
		{ClickAt, `{"tab_id":null,"x":0,"y":0,"button":"left","click_count":4,"keys":[]}`, "click_count", false, "from 1 to 3"},
		{ClickAt, `{"tab_id":null,"x":-3,"y":0,"button":"left","click_count":1,"keys":[]}`, "x", false, "at least 0"},
		{ClickAt, `{"tab_id":null,"x":0,"y":0,"button":"left","click_count":1,"keys":["Shift","Shift"]}`, "keys[1]", false, "repeated"},
		{ClickAt, `{"tab_id":null,"x":0,"y":0,"button":"left","click_count":1,"keys":["Ctrl"]}`, "keys[0]", false, "Control, Alt, Meta, Shift"},
		{ClickAt, `{"tab_id":null,"x":0,"y":0,"button":"left","click_count":3,"keys":["Control","Alt","Meta","Shift"]}`, "", true, ""},
		// drag_path: 2 to 100 points exactly {x, y}.
		{DragPath, `{"tab_id":null,"path":` + points(1) + `,"keys":[]}`, "path", false, "2 to 100 points"},
		{DragPath, `{"tab_id":null,"path":` + points(100) + `,"keys":[]}`, "", true, ""},
		{DragPath, `{"tab_id":null,"path":` + points(101) + `,"keys":[]}`, "path", false, "2 to 100 points"},
		{DragPath, `{"tab_id":null,"path":[{"x":1,"y":1},{"x":2,"y":2,"z":3}],"keys":[]}`, "path[1].z", false, "unknown field"},
		{DragPath, `{"tab_id":null,"path":[{"x":1,"y":1},{"x":2}],"keys":[]}`, "path[1].y", false, "missing"},
		{DragPath, `{"tab_id":null,"path":[{"x":1,"y":1},[2,2]],"keys":[]}`, "path[1]", false, "must be an object"},
		{DragPath, `{"tab_id":null,"path":[{"x":1,"y":1},{"x":2,"y":-2}],"keys":[]}`, "path[1].y", false, "at least 0"},
		// hold_keys: 1 to 8 unique non-empty keys of at most 64 bytes; 1 to 3,000 ms.
		{HoldKeys, `{"tab_id":null,"keys":[],"duration_ms":1}`, "keys", false, "1 to 8"},
		{HoldKeys, `{"tab_id":null,"keys":` + keysJSON(8) + `,"duration_ms":1}`, "", true, ""},
		{HoldKeys, `{"tab_id":null,"keys":` + keysJSON(9) + `,"duration_ms":1}`, "keys", false, "1 to 8"},
		{HoldKeys, `{"tab_id":null,"keys":["a","a"],"duration_ms":1}`, "keys[1]", false, "repeated"},
		{HoldKeys, `{"tab_id":null,"keys":[""],"duration_ms":1}`, "keys[0]", false, "must not be empty"},
		{HoldKeys, `{"tab_id":null,"keys":["` + b(64) + `"],"duration_ms":3000}`, "", true, ""},
		{HoldKeys, `{"tab_id":null,"keys":["` + b(65) + `"],"duration_ms":1}`, "keys[0]", false, "over 64"},
		{HoldKeys, `{"tab_id":null,"keys":["a"],"duration_ms":0}`, "duration_ms", false, "from 1 to 3000"},
		{HoldKeys, `{"tab_id":null,"keys":["a"],"duration_ms":3001}`, "duration_ms", false, "from 1 to 3000"},
		// set_checked: a boolean, not a number or a string.
		{SetChecked, `{"tab_id":null,"target":"e","checked":1}`, "checked", false, "must be a boolean"},
		{SetChecked, `{"tab_id":null,"target":"e","checked":"true"}`, "checked", false, "must be a boolean"},
		// read_diagnostics: console or network, limit 1 to 100.
		{ReadDiagnostics, `{"tab_id":null,"source":"dom","limit":1}`, "source", false, "console, network"},
		{ReadDiagnostics, `{"tab_id":null,"source":"network","limit":0}`, "limit", false, "from 1 to 100"},
		{ReadDiagnostics, `{"tab_id":null,"source":"network","limit":100}`, "", true, ""},
		{ReadDiagnostics, `{"tab_id":null,"source":"network","limit":101}`, "limit", false, "from 1 to 100"},
		// run_script: non-empty source, 1 to 30,000 ms.
		{RunScript, `{"tab_id":null,"source":"","timeout_ms":1}`, "source", false, "must not be empty"},
		{RunScript, `{"tab_id":null,"source":"1","timeout_ms":30001}`, "timeout_ms", false, "from 1 to 30000"},
		// File grants: 1 to 256 bytes.
		{UploadFile, `{"grant_id":""}`, "grant_id", false, "must not be empty"},
		{UploadFile, `{"grant_id":"` + b(256) + `"}`, "", true, ""},
		{DownloadFile, `{"grant_id":"` + b(257) + `"}`, "grant_id", false, "over 256"},
		{DownloadFile, `{"grant_id":"g","tab_id":null}`, "tab_id", false, "unknown field"},
		// Lists of strings.
		{Key, `{"keys":["a",1],"tab_id":null}`, "keys[1]", false, "must be a string"},
		{SelectOption, `{"target":"e","values":"oslo","tab_id":null}`, "values", false, "must be an array"},
		{Type, `{"text":"x","target":null,"tab_id":null}`, "", true, ""},
	}
	for _, c := range cases {
		_, err := DecodeArguments(c.m, []byte(c.args))
		if c.ok {
			if err != nil {
				t.Errorf("%s %.80s: refused: %v", c.m, c.args, err)
			}
			continue
		}
		var ae *ArgumentError
		if !errors.As(err, &ae) {
			t.Errorf("%s %.80s: accepted or wrong error (%v), want refused", c.m, c.args, err)
			continue
		}
		if ae.Member != c.m || ae.Field != c.field || !strings.Contains(ae.Reason, c.why) {
			t.Errorf("%s %.80s: error %q (field %q), want field %q and %q", c.m, c.args, err, ae.Field, c.field, c.why)
		}
		if !strings.Contains(err.Error(), string(c.m)) {
			t.Errorf("%s: error %q does not name the member", c.m, err)
		}
	}
}

// TestEveryFieldIsRequired drops each field of each member's valid example
// in turn: every one is refused as missing.
func TestEveryFieldIsRequired(t *testing.T) {
	for _, s := range specs {
		for _, f := range s.fields {
			v, err := parseJSON([]byte(validArgs[s.name]))
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for i, k := range v.keys {
				if k != f {
					parts = append(parts, `"`+k+`":`+encodeTree(v.vals[i]))
				}
			}
			_, err = DecodeArguments(s.name, []byte("{"+strings.Join(parts, ",")+"}"))
			var ae *ArgumentError
			if !errors.As(err, &ae) || ae.Field != f || !strings.Contains(ae.Reason, "missing") {
				t.Errorf("%s without %s: %v, want missing", s.name, f, err)
			}
		}
	}
}

// TestWaitForNormalisesWhiteSpace checks the driver gets the normalised
// text the limit was measured on.
func TestWaitForNormalisesWhiteSpace(t *testing.T) {
	a, err := DecodeArguments(WaitFor, []byte(`{"text":"  Order\n\t saved \u00a0 ","timeout_ms":5,"tab_id":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.(WaitForArgs).Text; got != "Order saved" {
		t.Fatalf("text %q, want %q", got, "Order saved")
	}
}

// TestInvalidCallRefusesTheWholeResponse checks a call with bad arguments
// is refused before any state is read or consent asked, and the other calls
// of the response do not run.
func TestInvalidCallRefusesTheWholeResponse(t *testing.T) {
	f := newFake()
	ts := newToolset(t, f)
	outs, res, err := runCalls(t, ts,
		[2]string{"read_page", validArgs[ReadPage]},
		[2]string{"click", `{"target":"e1","tab_id":null,"force":true}`},
		[2]string{"navigate", validArgs[Navigate]})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if log := f.log.Entries(); len(log) != 0 {
		t.Fatalf("something ran: %v", log)
	}
	wantOutcomes := []Outcome{OutcomeSkipped, OutcomeInvalid, OutcomeSkipped}
	for i, o := range outs {
		if o.Body.OK || o.has("state") || o.has("result") {
			t.Errorf("output %d: %s, want a failure without state or result", i, o.Raw)
		}
		if res.Calls[i].Outcome != wantOutcomes[i] || res.Calls[i].Attempted {
			t.Errorf("call %d: %+v, want outcome %s, not attempted", i, res.Calls[i], wantOutcomes[i])
		}
	}
	if !strings.Contains(outs[1].Body.Error, `click: force: unknown field`) {
		t.Errorf("the invalid call's output %q does not say why", outs[1].Body.Error)
	}
	if !strings.Contains(outs[0].Body.Error, "Not run") {
		t.Errorf("a valid call's output %q does not say it did not run", outs[0].Body.Error)
	}
}
