package browser

import "slices"

// Arguments are one call's validated arguments: one of the *Args types of
// this file (values, not pointers). Drivers and callbacks each receive their
// own deep copy, so changing one never changes what another sees or what
// runs. A nil TabID means the active tab.
type Arguments interface {
	// Member is the method the arguments are for.
	Member() Member
	clone() Arguments
}

// Filter chooses which elements a page read reports.
type Filter string

// The filters of read_page and read_page_scoped.
const (
	FilterAll         Filter = "all"
	FilterInteractive Filter = "interactive"
)

// Direction is a scroll direction.
type Direction string

// The directions of scroll.
const (
	DirectionUp    Direction = "up"
	DirectionDown  Direction = "down"
	DirectionLeft  Direction = "left"
	DirectionRight Direction = "right"
)

// Button is a mouse button of click_at.
type Button string

// The buttons of click_at.
const (
	ButtonLeft   Button = "left"
	ButtonRight  Button = "right"
	ButtonMiddle Button = "middle"
)

// Modifier is a key held during click_at or drag_path.
type Modifier string

// The modifiers of click_at and drag_path.
const (
	ModifierControl Modifier = "Control"
	ModifierAlt     Modifier = "Alt"
	ModifierMeta    Modifier = "Meta"
	ModifierShift   Modifier = "Shift"
)

// DiagnosticsSource is what read_diagnostics reads.
type DiagnosticsSource string

// The sources of read_diagnostics.
const (
	SourceConsole DiagnosticsSource = "console"
	SourceNetwork DiagnosticsSource = "network"
)

// Point is a position in CSS pixels of the whole visible area of the page.
type Point struct {
	X int64 `json:"x"`
	Y int64 `json:"y"`
}

// NavigateArgs are navigate's arguments. URL is the requested URL as the
// model wrote it; the URL policy saw it parsed.
type NavigateArgs struct {
	URL   string  `json:"url"`
	TabID *string `json:"tab_id"`
}

// ReadPageArgs are read_page's arguments.
type ReadPageArgs struct {
	Filter Filter  `json:"filter"`
	TabID  *string `json:"tab_id"`
}

// GetPageTextArgs are get_page_text's arguments.
type GetPageTextArgs struct {
	TabID *string `json:"tab_id"`
}

// FindArgs are find's arguments.
type FindArgs struct {
	Query string  `json:"query"`
	TabID *string `json:"tab_id"`
}

// ClickArgs are click's arguments. Target is a ref from a page read.
type ClickArgs struct {
	Target string  `json:"target"`
	TabID  *string `json:"tab_id"`
}

// TypeArgs are type's arguments. A nil Target types into the focused
// control.
type TypeArgs struct {
	Text   string  `json:"text"`
	Target *string `json:"target"`
	TabID  *string `json:"tab_id"`
}

// KeyArgs are key's arguments.
type KeyArgs struct {
	Keys  []string `json:"keys"`
	TabID *string  `json:"tab_id"`
}

// ScrollArgs are scroll's arguments; Amount is non-negative.
type ScrollArgs struct {
	Direction Direction `json:"direction"`
	Amount    int64     `json:"amount"`
	TabID     *string   `json:"tab_id"`
}

// ScrollToArgs are scroll_to's arguments.
type ScrollToArgs struct {
	Target string  `json:"target"`
	TabID  *string `json:"tab_id"`
}

// WaitForArgs are wait_for's arguments. Text is whitespace-normalised
// (runs of white space made one space, ends trimmed), non-empty and at most
// MaxWaitTextBytes; TimeoutMS is 1 to MaxTimeoutMS.
type WaitForArgs struct {
	Text      string  `json:"text"`
	TimeoutMS int64   `json:"timeout_ms"`
	TabID     *string `json:"tab_id"`
}

// SelectOptionArgs are select_option's arguments.
type SelectOptionArgs struct {
	Target string   `json:"target"`
	Values []string `json:"values"`
	TabID  *string  `json:"tab_id"`
}

// HoverArgs are hover's arguments.
type HoverArgs struct {
	Target string  `json:"target"`
	TabID  *string `json:"tab_id"`
}

// ScreenshotArgs are screenshot's arguments.
type ScreenshotArgs struct {
	TabID *string `json:"tab_id"`
}

// ZoomArgs are zoom's arguments: Region is [left, top, right, bottom] in
// CSS pixels of the whole visible area, with right > left and bottom > top.
type ZoomArgs struct {
	Region [4]int64 `json:"region"`
	TabID  *string  `json:"tab_id"`
}

// NewTabArgs are new_tab's arguments; a nil URL opens a blank tab.
type NewTabArgs struct {
	URL *string `json:"url"`
}

// ListTabsArgs are list_tabs's (no) arguments.
type ListTabsArgs struct{}

// SwitchTabArgs are switch_tab's arguments.
type SwitchTabArgs struct {
	TabID string `json:"tab_id"`
}

// CloseTabArgs are close_tab's arguments.
type CloseTabArgs struct {
	TabID string `json:"tab_id"`
}

// ReadPageScopedArgs are read_page_scoped's arguments. A nil Root discovers
// the visible scopes; otherwise it is a scope ref the driver issued.
type ReadPageScopedArgs struct {
	TabID  *string `json:"tab_id"`
	Root   *string `json:"root"`
	Depth  int64   `json:"depth"`
	Filter Filter  `json:"filter"`
}

// ClickAtArgs are click_at's arguments.
type ClickAtArgs struct {
	TabID      *string    `json:"tab_id"`
	X          int64      `json:"x"`
	Y          int64      `json:"y"`
	Button     Button     `json:"button"`
	ClickCount int64      `json:"click_count"`
	Keys       []Modifier `json:"keys"`
}

// DragPathArgs are drag_path's arguments.
type DragPathArgs struct {
	TabID *string    `json:"tab_id"`
	Path  []Point    `json:"path"`
	Keys  []Modifier `json:"keys"`
}

// HoldKeysArgs are hold_keys's arguments.
type HoldKeysArgs struct {
	TabID      *string  `json:"tab_id"`
	Keys       []string `json:"keys"`
	DurationMS int64    `json:"duration_ms"`
}

// HoverAtArgs are hover_at's arguments.
type HoverAtArgs struct {
	TabID *string `json:"tab_id"`
	X     int64   `json:"x"`
	Y     int64   `json:"y"`
}

// SetCheckedArgs are set_checked's arguments.
type SetCheckedArgs struct {
	TabID   *string `json:"tab_id"`
	Target  string  `json:"target"`
	Checked bool    `json:"checked"`
}

// ReadDiagnosticsArgs are read_diagnostics's arguments.
type ReadDiagnosticsArgs struct {
	TabID  *string           `json:"tab_id"`
	Source DiagnosticsSource `json:"source"`
	Limit  int64             `json:"limit"`
}

// RunScriptArgs are run_script's arguments; Source is kept whole.
type RunScriptArgs struct {
	TabID     *string `json:"tab_id"`
	Source    string  `json:"source"`
	TimeoutMS int64   `json:"timeout_ms"`
}

// UploadFileArgs are upload_file's arguments: a grant the caller issued for
// one approved file, never a path or a URL.
type UploadFileArgs struct {
	GrantID string `json:"grant_id"`
}

// DownloadFileArgs are download_file's arguments: a grant the caller issued
// for one approved file, never a path or a URL.
type DownloadFileArgs struct {
	GrantID string `json:"grant_id"`
}

func (NavigateArgs) Member() Member        { return Navigate }
func (ReadPageArgs) Member() Member        { return ReadPage }
func (GetPageTextArgs) Member() Member     { return GetPageText }
func (FindArgs) Member() Member            { return Find }
func (ClickArgs) Member() Member           { return Click }
func (TypeArgs) Member() Member            { return Type }
func (KeyArgs) Member() Member             { return Key }
func (ScrollArgs) Member() Member          { return Scroll }
func (ScrollToArgs) Member() Member        { return ScrollTo }
func (WaitForArgs) Member() Member         { return WaitFor }
func (SelectOptionArgs) Member() Member    { return SelectOption }
func (HoverArgs) Member() Member           { return Hover }
func (ScreenshotArgs) Member() Member      { return Screenshot }
func (ZoomArgs) Member() Member            { return Zoom }
func (NewTabArgs) Member() Member          { return NewTab }
func (ListTabsArgs) Member() Member        { return ListTabs }
func (SwitchTabArgs) Member() Member       { return SwitchTab }
func (CloseTabArgs) Member() Member        { return CloseTab }
func (ReadPageScopedArgs) Member() Member  { return ReadPageScoped }
func (ClickAtArgs) Member() Member         { return ClickAt }
func (DragPathArgs) Member() Member        { return DragPath }
func (HoldKeysArgs) Member() Member        { return HoldKeys }
func (HoverAtArgs) Member() Member         { return HoverAt }
func (SetCheckedArgs) Member() Member      { return SetChecked }
func (ReadDiagnosticsArgs) Member() Member { return ReadDiagnostics }
func (RunScriptArgs) Member() Member       { return RunScript }
func (UploadFileArgs) Member() Member      { return UploadFile }
func (DownloadFileArgs) Member() Member    { return DownloadFile }

func cloneString(p *string) *string {
	if p == nil {
		return nil
	}
	s := *p
	return &s
}

func (a NavigateArgs) clone() Arguments {
	a.TabID = cloneString(a.TabID)
	return a
}

func (a ReadPageArgs) clone() Arguments {
	a.TabID = cloneString(a.TabID)
	return a
}

func (a GetPageTextArgs) clone() Arguments {
	a.TabID = cloneString(a.TabID)
	return a
}

func (a FindArgs) clone() Arguments {
	a.TabID = cloneString(a.TabID)
	return a
}

func (a ClickArgs) clone() Arguments {
	a.TabID = cloneString(a.TabID)
	return a
}

func (a TypeArgs) clone() Arguments {
	a.Target, a.TabID = cloneString(a.Target), cloneString(a.TabID)
	return a
}

func (a KeyArgs) clone() Arguments {
	a.Keys, a.TabID = slices.Clone(a.Keys), cloneString(a.TabID)
	return a
}

func (a ScrollArgs) clone() Arguments {
	a.TabID = cloneString(a.TabID)
	return a
}

func (a ScrollToArgs) clone() Arguments {
	a.TabID = cloneString(a.TabID)
	return a
}

func (a WaitForArgs) clone() Arguments {
	a.TabID = cloneString(a.TabID)
	return a
}

func (a SelectOptionArgs) clone() Arguments {
	a.Values, a.TabID = slices.Clone(a.Values), cloneString(a.TabID)
	return a
}

func (a HoverArgs) clone() Arguments {
	a.TabID = cloneString(a.TabID)
	return a
}

func (a ScreenshotArgs) clone() Arguments {
	a.TabID = cloneString(a.TabID)
	return a
}

func (a ZoomArgs) clone() Arguments {
	a.TabID = cloneString(a.TabID)
	return a
}

func (a NewTabArgs) clone() Arguments {
	a.URL = cloneString(a.URL)
	return a
}

func (a ListTabsArgs) clone() Arguments  { return a }
func (a SwitchTabArgs) clone() Arguments { return a }
func (a CloseTabArgs) clone() Arguments  { return a }

func (a ReadPageScopedArgs) clone() Arguments {
	a.TabID, a.Root = cloneString(a.TabID), cloneString(a.Root)
	return a
}

func (a ClickAtArgs) clone() Arguments {
	a.TabID, a.Keys = cloneString(a.TabID), slices.Clone(a.Keys)
	return a
}

func (a DragPathArgs) clone() Arguments {
	a.TabID, a.Path, a.Keys = cloneString(a.TabID), slices.Clone(a.Path), slices.Clone(a.Keys)
	return a
}

func (a HoldKeysArgs) clone() Arguments {
	a.TabID, a.Keys = cloneString(a.TabID), slices.Clone(a.Keys)
	return a
}

func (a HoverAtArgs) clone() Arguments {
	a.TabID = cloneString(a.TabID)
	return a
}

func (a SetCheckedArgs) clone() Arguments {
	a.TabID = cloneString(a.TabID)
	return a
}

func (a ReadDiagnosticsArgs) clone() Arguments {
	a.TabID = cloneString(a.TabID)
	return a
}

func (a RunScriptArgs) clone() Arguments {
	a.TabID = cloneString(a.TabID)
	return a
}

func (a UploadFileArgs) clone() Arguments   { return a }
func (a DownloadFileArgs) clone() Arguments { return a }
