package browser

import (
	"context"
	"slices"
	"unicode/utf8"
)

// Member is the name of a browser method; it is also the name of the
// function tool the model calls.
type Member string

// The 18 default members, in the toolset's order.
const (
	Navigate     Member = "navigate"
	ReadPage     Member = "read_page"
	GetPageText  Member = "get_page_text"
	Find         Member = "find"
	Click        Member = "click"
	Type         Member = "type"
	Key          Member = "key"
	Scroll       Member = "scroll"
	ScrollTo     Member = "scroll_to"
	WaitFor      Member = "wait_for"
	SelectOption Member = "select_option"
	Hover        Member = "hover"
	Screenshot   Member = "screenshot"
	Zoom         Member = "zoom"
	NewTab       Member = "new_tab"
	ListTabs     Member = "list_tabs"
	SwitchTab    Member = "switch_tab"
	CloseTab     Member = "close_tab"
)

// The six scoped-read and pointer members, off unless selected.
const (
	ReadPageScoped Member = "read_page_scoped"
	ClickAt        Member = "click_at"
	DragPath       Member = "drag_path"
	HoldKeys       Member = "hold_keys"
	HoverAt        Member = "hover_at"
	SetChecked     Member = "set_checked"
)

// The four diagnostics, script and file members, off unless selected.
const (
	ReadDiagnostics Member = "read_diagnostics"
	RunScript       Member = "run_script"
	UploadFile      Member = "upload_file"
	DownloadFile    Member = "download_file"
)

// AllMembers returns the names of every predefined member (the seeds'
// BROWSER_MEMBERS), in the toolset's order, without looking at any driver.
// The slice is the caller's own.
func AllMembers() []Member {
	out := make([]Member, len(specs))
	for i, s := range specs {
		out[i] = s.name
	}
	return out
}

// DefaultMembers returns the names of the 18 default members (the seeds'
// DEFAULT_BROWSER_MEMBERS), in the toolset's order. The slice is the
// caller's own.
func DefaultMembers() []Member {
	var out []Member
	for _, s := range specs {
		if s.group == groupDefault {
			out = append(out, s.name)
		}
	}
	return out
}

type memberGroup uint8

const (
	groupDefault memberGroup = iota
	groupScopedPointer
	groupDiagnosticsFiles
)

// resultKind says how a member's result is checked and shown.
type resultKind uint8

const (
	resultText        resultKind = iota // *string: text or nothing
	resultRead                          // ReadResult
	resultPageText                      // ReadResult with no elements
	resultScoped                        // *BrowserScopedReadV1, required
	resultDiagnostics                   // *BrowserReadV1 with no elements, required
	resultScript                        // string
	resultImage                         // Image
	resultFile                          // BrowserFileOutcome
	resultTabs                          // list_tabs: the state itself
)

// memberSpec is everything the toolset knows about one member.
type memberSpec struct {
	name  Member
	group memberGroup
	// confirm: the member changes state or reads diagnostics, so it needs
	// the confirm callback's exact true.
	confirm bool
	// urlPolicy: a requested URL is checked by the URL policy first.
	urlPolicy bool
	// fields are the argument names, all required, in schema order.
	fields []string
	decode func(*decoder) Arguments
	// implemented and call are nil for list_tabs, derived from State.
	implemented func(Driver) bool
	call        func(context.Context, Driver, Arguments) (any, error)
	result      resultKind
}

// read reports whether the member may be listed in confirm_reads: it reads
// the page without needing confirm.
func (s *memberSpec) read() bool { return !s.confirm }

// method adapts a driver interface's method to the toolset.
func method[I any, A Arguments, R any](f func(I, context.Context, A) (R, error)) (func(Driver) bool, func(context.Context, Driver, Arguments) (any, error)) {
	implemented := func(d Driver) bool {
		_, ok := d.(I)
		return ok
	}
	call := func(ctx context.Context, d Driver, a Arguments) (any, error) {
		r, err := f(d.(I), ctx, a.(A))
		return r, err
	}
	return implemented, call
}

func newSpec[I any, A Arguments, R any](name Member, group memberGroup, confirm bool, fields []string,
	decode func(*decoder) Arguments, f func(I, context.Context, A) (R, error), result resultKind) *memberSpec {
	s := &memberSpec{name: name, group: group, confirm: confirm, fields: fields, decode: decode, result: result}
	s.implemented, s.call = method(f)
	return s
}

const (
	needsConfirm = true
	noConfirm    = false
)

func argNames(names ...string) []string { return names }

// specs lists every member in the toolset's order: the table of the
// contract's "Selecione os métodos", then the scoped and pointer methods,
// then diagnostics, scripts and files.
var specs = func() []*memberSpec {
	d, sp, df := groupDefault, groupScopedPointer, groupDiagnosticsFiles
	tab := argNames("tab_id")
	targetTab := argNames("target", "tab_id")
	navigate := newSpec(Navigate, d, needsConfirm, argNames("url", "tab_id"), decodeNavigate, Navigator.Navigate, resultText)
	navigate.urlPolicy = true
	newTab := newSpec(NewTab, d, needsConfirm, argNames("url"), decodeNewTab, TabOpener.NewTab, resultText)
	newTab.urlPolicy = true
	listTabs := &memberSpec{name: ListTabs, group: d, fields: argNames(), decode: decodeListTabs, result: resultTabs}
	return []*memberSpec{
		navigate,
		newSpec(ReadPage, d, noConfirm, argNames("filter", "tab_id"), decodeReadPage, PageReader.ReadPage, resultRead),
		newSpec(GetPageText, d, noConfirm, tab, decodeGetPageText, PageTextReader.GetPageText, resultPageText),
		newSpec(Find, d, noConfirm, argNames("query", "tab_id"), decodeFind, Finder.Find, resultRead),
		newSpec(Click, d, needsConfirm, targetTab, decodeClick, Clicker.Click, resultText),
		newSpec(Type, d, needsConfirm, argNames("text", "target", "tab_id"), decodeType, Typer.Type, resultText),
		newSpec(Key, d, needsConfirm, argNames("keys", "tab_id"), decodeKey, KeyPresser.Key, resultText),
		newSpec(Scroll, d, needsConfirm, argNames("direction", "amount", "tab_id"), decodeScroll, Scroller.Scroll, resultText),
		newSpec(ScrollTo, d, needsConfirm, targetTab, decodeScrollTo, TargetScroller.ScrollTo, resultText),
		newSpec(WaitFor, d, noConfirm, argNames("text", "timeout_ms", "tab_id"), decodeWaitFor, TextWaiter.WaitFor, resultText),
		newSpec(SelectOption, d, needsConfirm, argNames("target", "values", "tab_id"), decodeSelectOption, OptionSelector.SelectOption, resultText),
		newSpec(Hover, d, needsConfirm, targetTab, decodeHover, Hoverer.Hover, resultText),
		newSpec(Screenshot, d, noConfirm, tab, decodeScreenshot, Screenshotter.Screenshot, resultImage),
		newSpec(Zoom, d, noConfirm, argNames("region", "tab_id"), decodeZoom, Zoomer.Zoom, resultImage),
		newTab,
		listTabs,
		newSpec(SwitchTab, d, needsConfirm, tab, decodeSwitchTab, TabSwitcher.SwitchTab, resultText),
		newSpec(CloseTab, d, needsConfirm, tab, decodeCloseTab, TabCloser.CloseTab, resultText),

		newSpec(ReadPageScoped, sp, noConfirm, argNames("tab_id", "root", "depth", "filter"), decodeReadPageScoped, ScopedPageReader.ReadPageScoped, resultScoped),
		newSpec(ClickAt, sp, needsConfirm, argNames("tab_id", "x", "y", "button", "click_count", "keys"), decodeClickAt, PointClicker.ClickAt, resultText),
		newSpec(DragPath, sp, needsConfirm, argNames("tab_id", "path", "keys"), decodeDragPath, PathDragger.DragPath, resultText),
		newSpec(HoldKeys, sp, needsConfirm, argNames("tab_id", "keys", "duration_ms"), decodeHoldKeys, KeyHolder.HoldKeys, resultText),
		newSpec(HoverAt, sp, needsConfirm, argNames("tab_id", "x", "y"), decodeHoverAt, PointHoverer.HoverAt, resultText),
		newSpec(SetChecked, sp, needsConfirm, argNames("tab_id", "target", "checked"), decodeSetChecked, CheckedSetter.SetChecked, resultText),

		newSpec(ReadDiagnostics, df, needsConfirm, argNames("tab_id", "source", "limit"), decodeReadDiagnostics, DiagnosticsReader.ReadDiagnostics, resultDiagnostics),
		newSpec(RunScript, df, needsConfirm, argNames("tab_id", "source", "timeout_ms"), decodeRunScript, ScriptRunner.RunScript, resultScript),
		newSpec(UploadFile, df, needsConfirm, argNames("grant_id"), decodeUploadFile, FileUploader.UploadFile, resultFile),
		newSpec(DownloadFile, df, needsConfirm, argNames("grant_id"), decodeDownloadFile, FileDownloader.DownloadFile, resultFile),
	}
}()

var specByName = func() map[Member]*memberSpec {
	m := make(map[Member]*memberSpec, len(specs))
	for _, s := range specs {
		m[s.name] = s
	}
	return m
}()

// ArgumentNames returns member m's argument names, all required, in schema
// order (nil for a name that is no member): what a tool declaration of m
// must list, as its decoder accepts exactly these.
func ArgumentNames(m Member) []string {
	if s, ok := specByName[m]; ok {
		return slices.Clone(s.fields)
	}
	return nil
}

// implements reports whether d offers member s (list_tabs needs only State).
func (s *memberSpec) implements(d Driver) bool {
	return s.implemented == nil || s.implemented(d)
}

// checked is a driver's result after validation: the copy the output shows.
type checked struct {
	// value is the output's "result" (nil: null).
	value any
	image *Image
	// notOK marks a file outcome that did not complete.
	notOK bool
}

// check validates a driver's raw result for member s and copies it.
func (s *memberSpec) check(raw any) (checked, error) {
	switch s.result {
	case resultText:
		t, _ := raw.(*string)
		if t == nil {
			return checked{}, nil
		}
		if !utf8.ValidString(*t) {
			return checked{}, invalidResult("%s returned text that is not valid UTF-8", s.name)
		}
		return checked{value: *t}, nil
	case resultRead, resultPageText:
		r, _ := raw.(ReadResult)
		switch {
		case r.Text != nil && r.Read != nil:
			return checked{}, invalidResult("%s returned both text and a structured read", s.name)
		case r.Text != nil:
			if !utf8.ValidString(*r.Text) {
				return checked{}, invalidResult("%s returned text that is not valid UTF-8", s.name)
			}
			return checked{value: *r.Text}, nil
		case r.Read != nil:
			if s.result == resultPageText && len(r.Read.Elements) > 0 {
				return checked{}, invalidResult("get_page_text returned %d elements; its elements must be empty", len(r.Read.Elements))
			}
			c, err := copyRead(*r.Read)
			return checked{value: &c}, err
		}
		return checked{}, nil
	case resultScoped:
		c, err := copyScopedRead(raw.(*BrowserScopedReadV1))
		return checked{value: c}, err
	case resultDiagnostics:
		r, _ := raw.(*BrowserReadV1)
		if r == nil {
			return checked{}, invalidResult("read_diagnostics returned no read")
		}
		if len(r.Elements) > 0 {
			return checked{}, invalidResult("read_diagnostics returned %d elements; its elements must be empty", len(r.Elements))
		}
		c, err := copyRead(*r)
		return checked{value: &c}, err
	case resultScript:
		t := raw.(string)
		if !utf8.ValidString(t) {
			return checked{}, invalidResult("run_script returned text that is not valid UTF-8")
		}
		return checked{value: t}, nil
	case resultImage:
		img, err := checkImage(raw.(Image))
		return checked{image: img}, err
	case resultFile:
		o, err := checkFileOutcome(raw.(BrowserFileOutcome))
		return checked{value: o, notOK: o.Status != FileCompleted}, err
	}
	return checked{}, nil
}

// enabledOrder sorts members into the toolset's own order.
func enabledOrder(set map[Member]bool) []*memberSpec {
	var out []*memberSpec
	for _, s := range specs {
		if set[s.name] {
			out = append(out, s)
		}
	}
	return slices.Clip(out)
}
