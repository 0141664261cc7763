package browser

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"
)

// Limits of the arguments.
const (
	// MaxWaitTextBytes bounds wait_for's text after whitespace normalisation.
	MaxWaitTextBytes = 256
	// MaxTimeoutMS bounds wait_for's and run_script's timeout_ms.
	MaxTimeoutMS = 30000
	// MinDepth and MaxDepth bound read_page_scoped's depth.
	MinDepth, MaxDepth = 1, 32
	// MaxDiagnosticsLimit bounds read_diagnostics's limit (from 1).
	MaxDiagnosticsLimit = 100
	// MinPathPoints and MaxPathPoints bound drag_path's path.
	MinPathPoints, MaxPathPoints = 2, 100
	// MaxHeldKeys bounds hold_keys's keys (from 1); MaxKeyBytes each name.
	MaxHeldKeys, MaxKeyBytes = 8, 64
	// MaxHoldMS bounds hold_keys's duration_ms (from 1).
	MaxHoldMS = 3000
	// MaxClickCount bounds click_at's click_count (from 1).
	MaxClickCount = 3
	// MaxGrantBytes bounds a file method's grant_id.
	MaxGrantBytes = 256
)

// ArgumentError is a call's arguments breaking the contract: not a JSON
// object, an unknown or missing field, a wrong type, a value out of range.
// Its text names the member and the field and is safe to show the model.
type ArgumentError struct {
	Member Member
	// Field is the offending field's path ("path[2].x"), or "" when the
	// arguments as a whole are wrong.
	Field  string
	Reason string
}

func (e *ArgumentError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("invalid arguments for %s: %s", e.Member, e.Reason)
	}
	return fmt.Sprintf("invalid arguments for %s: %s: %s", e.Member, e.Field, e.Reason)
}

// DecodeArguments strictly decodes and validates raw JSON arguments of
// member m, as the toolset does with every call before anything runs:
// every field of the member is required (null where the contract allows
// it), unknown fields are refused (inside points too), integers must be
// exact safe integers (a boolean is not a number), strings valid Unicode,
// and every limit and range of the contract holds. The error is an
// *ArgumentError.
func DecodeArguments(m Member, raw []byte) (Arguments, error) {
	spec, ok := specByName[m]
	if !ok {
		return nil, &ArgumentError{Member: m, Reason: "not a browser member"}
	}
	v, err := parseJSON(raw)
	if err != nil {
		return nil, &ArgumentError{Member: m, Reason: err.Error()}
	}
	d, ferr := newDecoder(v, spec.fields)
	if ferr == nil {
		args := spec.decode(d)
		if ferr = d.err; ferr == nil {
			return args, nil
		}
	}
	return nil, &ArgumentError{Member: m, Field: ferr.path, Reason: ferr.reason}
}

type fieldError struct {
	path, reason string
}

// decoder reads an arguments object field by field, keeping the first
// error; after one, every read returns a zero value.
type decoder struct {
	fields map[string]jsonValue
	err    *fieldError
}

func newDecoder(v jsonValue, names []string) (*decoder, *fieldError) {
	if v.kind != jsonObject {
		return nil, &fieldError{reason: fmt.Sprintf("the arguments must be a JSON object, not %s", v.kind)}
	}
	d := &decoder{fields: make(map[string]jsonValue, len(v.keys))}
	for i, k := range v.keys {
		if !slices.Contains(names, k) {
			return nil, &fieldError{path: k, reason: "unknown field"}
		}
		d.fields[k] = v.vals[i]
	}
	for _, n := range names {
		if _, ok := d.fields[n]; !ok {
			return nil, &fieldError{path: n, reason: "missing (every field is required; use null where it is allowed)"}
		}
	}
	return d, nil
}

func (d *decoder) fail(path, format string, args ...any) {
	if d.err == nil {
		d.err = &fieldError{path: path, reason: fmt.Sprintf(format, args...)}
	}
}

// is reports whether v, at path, is of kind k, and fails saying that it
// must be what when it is not. After a failure it reports false.
func (d *decoder) is(path string, v jsonValue, k jsonKind, what string) bool {
	if d.err != nil {
		return false
	}
	if v.kind != k {
		d.fail(path, "must be %s, not %s", what, v.kind)
		return false
	}
	return true
}

func (d *decoder) str(name string) string { return d.strAt(name, d.fields[name]) }

func (d *decoder) strAt(path string, v jsonValue) string {
	if !d.is(path, v, jsonString, "a string") {
		return ""
	}
	return v.text
}

func (d *decoder) optStr(name string) *string {
	v := d.fields[name]
	if d.err != nil || v.kind == jsonNull {
		return nil
	}
	if v.kind != jsonString {
		d.fail(name, "must be a string or null, not %s", v.kind)
		return nil
	}
	s := v.text
	return &s
}

func (d *decoder) tabID() *string { return d.optStr("tab_id") }

// nonEmpty checks a string is non-empty and at most limit bytes (limit 0:
// no limit).
func (d *decoder) nonEmpty(path, s string, limit int) string {
	switch {
	case d.err != nil:
	case s == "":
		d.fail(path, "must not be empty")
	case limit > 0 && len(s) > limit:
		d.fail(path, "is %d bytes of UTF-8, over %d", len(s), limit)
	}
	return s
}

func (d *decoder) integer(name string, min, max int64) int64 {
	return d.intAt(name, d.fields[name], min, max)
}

func (d *decoder) intAt(path string, v jsonValue, min, max int64) int64 {
	if d.err != nil {
		return 0
	}
	switch v.kind {
	case jsonNumber:
	case jsonBool:
		d.fail(path, "must be an integer; a boolean is not a number")
		return 0
	default:
		d.fail(path, "must be an integer, not %s", v.kind)
		return 0
	}
	n, err := safeInteger(v.text)
	if err != nil {
		d.fail(path, "%v", err)
		return 0
	}
	if n < min || n > max {
		if max == MaxSafeInteger {
			d.fail(path, "must be at least %d", min)
		} else {
			d.fail(path, "must be from %d to %d", min, max)
		}
		return 0
	}
	return n
}

func (d *decoder) boolean(name string) bool {
	v := d.fields[name]
	return d.is(name, v, jsonBool, "a boolean (true or false)") && v.b
}

func (d *decoder) array(name string) []jsonValue {
	v := d.fields[name]
	if !d.is(name, v, jsonArray, "an array") {
		return nil
	}
	return v.items
}

func (d *decoder) strings(name string) []string {
	items := d.array(name)
	out := make([]string, 0, len(items))
	for i, it := range items {
		out = append(out, d.strAt(fmt.Sprintf("%s[%d]", name, i), it))
	}
	if d.err != nil {
		return nil
	}
	return out
}

// enum reads a string field that must be one of allowed.
func enum[T ~string](d *decoder, name string, allowed ...T) T {
	return enumAt(d, name, d.fields[name], allowed...)
}

func enumAt[T ~string](d *decoder, path string, v jsonValue, allowed ...T) T {
	s := d.strAt(path, v)
	if d.err != nil {
		return ""
	}
	if !slices.Contains(allowed, T(s)) {
		names := make([]string, len(allowed))
		for i, a := range allowed {
			names[i] = string(a)
		}
		d.fail(path, "must be one of %s, not %q", strings.Join(names, ", "), s)
		return ""
	}
	return T(s)
}

// modifiers reads click_at's and drag_path's keys: a list without repeats
// of Control, Alt, Meta and Shift, possibly empty.
func (d *decoder) modifiers(name string) []Modifier {
	items := d.array(name)
	out := make([]Modifier, 0, len(items))
	for i, it := range items {
		path := fmt.Sprintf("%s[%d]", name, i)
		m := enumAt(d, path, it, ModifierControl, ModifierAlt, ModifierMeta, ModifierShift)
		if d.err == nil && slices.Contains(out, m) {
			d.fail(path, "%q is repeated", m)
		}
		out = append(out, m)
	}
	if d.err != nil {
		return nil
	}
	return out
}

func (d *decoder) point(path string, v jsonValue) Point {
	if !d.is(path, v, jsonObject, "an object {x, y}") {
		return Point{}
	}
	pd, ferr := newDecoder(v, []string{"x", "y"})
	if ferr != nil {
		d.fail(path+"."+ferr.path, "%s", ferr.reason)
		return Point{}
	}
	p := Point{X: pd.integer("x", 0, MaxSafeInteger), Y: pd.integer("y", 0, MaxSafeInteger)}
	if pd.err != nil {
		d.fail(path+"."+pd.err.path, "%s", pd.err.reason)
	}
	return p
}

// normalizeSpace collapses every run of white space to one space and trims
// both ends, as wait_for's limit is measured after that.
func normalizeSpace(s string) string {
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}

// requestedURL parses a URL the model asks to open; it must be absolute.
func requestedURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("is not a URL: %w", redactURLError(err))
	}
	if !u.IsAbs() {
		return nil, fmt.Errorf("is not an absolute URL (it has no scheme)")
	}
	return u, nil
}

func (d *decoder) url(path, s string) {
	if d.err != nil {
		return
	}
	if _, err := requestedURL(s); err != nil {
		d.fail(path, "%v", err)
	}
}

// The decoders, one per member.

func decodeNavigate(d *decoder) Arguments {
	a := NavigateArgs{URL: d.str("url"), TabID: d.tabID()}
	d.url("url", a.URL)
	return a
}

func decodeReadPage(d *decoder) Arguments {
	return ReadPageArgs{Filter: enum(d, "filter", FilterAll, FilterInteractive), TabID: d.tabID()}
}

func decodeGetPageText(d *decoder) Arguments { return GetPageTextArgs{TabID: d.tabID()} }

func decodeFind(d *decoder) Arguments { return FindArgs{Query: d.str("query"), TabID: d.tabID()} }

func decodeClick(d *decoder) Arguments { return ClickArgs{Target: d.str("target"), TabID: d.tabID()} }

func decodeType(d *decoder) Arguments {
	return TypeArgs{Text: d.str("text"), Target: d.optStr("target"), TabID: d.tabID()}
}

func decodeKey(d *decoder) Arguments { return KeyArgs{Keys: d.strings("keys"), TabID: d.tabID()} }

func decodeScroll(d *decoder) Arguments {
	return ScrollArgs{
		Direction: enum(d, "direction", DirectionUp, DirectionDown, DirectionLeft, DirectionRight),
		Amount:    d.integer("amount", 0, MaxSafeInteger),
		TabID:     d.tabID(),
	}
}

func decodeScrollTo(d *decoder) Arguments {
	return ScrollToArgs{Target: d.str("target"), TabID: d.tabID()}
}

func decodeWaitFor(d *decoder) Arguments {
	text := normalizeSpace(d.str("text"))
	return WaitForArgs{
		Text:      d.nonEmpty("text", text, MaxWaitTextBytes),
		TimeoutMS: d.integer("timeout_ms", 1, MaxTimeoutMS),
		TabID:     d.tabID(),
	}
}

func decodeSelectOption(d *decoder) Arguments {
	return SelectOptionArgs{Target: d.str("target"), Values: d.strings("values"), TabID: d.tabID()}
}

func decodeHover(d *decoder) Arguments { return HoverArgs{Target: d.str("target"), TabID: d.tabID()} }

func decodeScreenshot(d *decoder) Arguments { return ScreenshotArgs{TabID: d.tabID()} }

func decodeZoom(d *decoder) Arguments {
	items := d.array("region")
	var a ZoomArgs
	if d.err == nil && len(items) != 4 {
		d.fail("region", "must be [left, top, right, bottom], not %d numbers", len(items))
	}
	for i := 0; d.err == nil && i < 4; i++ {
		a.Region[i] = d.intAt(fmt.Sprintf("region[%d]", i), items[i], 0, MaxSafeInteger)
	}
	if d.err == nil && (a.Region[2] <= a.Region[0] || a.Region[3] <= a.Region[1]) {
		d.fail("region", "must have a positive width and height (right > left, bottom > top)")
	}
	a.TabID = d.tabID()
	return a
}

func decodeNewTab(d *decoder) Arguments {
	a := NewTabArgs{URL: d.optStr("url")}
	if a.URL != nil {
		d.url("url", *a.URL)
	}
	return a
}

func decodeListTabs(*decoder) Arguments { return ListTabsArgs{} }

func decodeSwitchTab(d *decoder) Arguments { return SwitchTabArgs{TabID: d.str("tab_id")} }

func decodeCloseTab(d *decoder) Arguments { return CloseTabArgs{TabID: d.str("tab_id")} }

func decodeReadPageScoped(d *decoder) Arguments {
	a := ReadPageScopedArgs{TabID: d.tabID(), Root: d.optStr("root")}
	if a.Root != nil {
		d.nonEmpty("root", *a.Root, MaxRefBytes)
	}
	a.Depth = d.integer("depth", MinDepth, MaxDepth)
	a.Filter = enum(d, "filter", FilterAll, FilterInteractive)
	return a
}

func decodeClickAt(d *decoder) Arguments {
	return ClickAtArgs{
		TabID:      d.tabID(),
		X:          d.integer("x", 0, MaxSafeInteger),
		Y:          d.integer("y", 0, MaxSafeInteger),
		Button:     enum(d, "button", ButtonLeft, ButtonRight, ButtonMiddle),
		ClickCount: d.integer("click_count", 1, MaxClickCount),
		Keys:       d.modifiers("keys"),
	}
}

func decodeDragPath(d *decoder) Arguments {
	a := DragPathArgs{TabID: d.tabID()}
	items := d.array("path")
	if d.err == nil && (len(items) < MinPathPoints || len(items) > MaxPathPoints) {
		d.fail("path", "must have %d to %d points, not %d", MinPathPoints, MaxPathPoints, len(items))
	}
	for i := 0; d.err == nil && i < len(items); i++ {
		a.Path = append(a.Path, d.point(fmt.Sprintf("path[%d]", i), items[i]))
	}
	a.Keys = d.modifiers("keys")
	if d.err != nil {
		a.Path = nil
	}
	return a
}

func decodeHoldKeys(d *decoder) Arguments {
	a := HoldKeysArgs{TabID: d.tabID(), Keys: d.strings("keys")}
	if d.err == nil && (len(a.Keys) < 1 || len(a.Keys) > MaxHeldKeys) {
		d.fail("keys", "must have 1 to %d keys, not %d", MaxHeldKeys, len(a.Keys))
	}
	for i, k := range a.Keys {
		path := fmt.Sprintf("keys[%d]", i)
		d.nonEmpty(path, k, MaxKeyBytes)
		if d.err == nil && slices.Contains(a.Keys[:i], k) {
			d.fail(path, "%q is repeated", k)
		}
	}
	a.DurationMS = d.integer("duration_ms", 1, MaxHoldMS)
	return a
}

func decodeHoverAt(d *decoder) Arguments {
	return HoverAtArgs{TabID: d.tabID(), X: d.integer("x", 0, MaxSafeInteger), Y: d.integer("y", 0, MaxSafeInteger)}
}

func decodeSetChecked(d *decoder) Arguments {
	return SetCheckedArgs{TabID: d.tabID(), Target: d.str("target"), Checked: d.boolean("checked")}
}

func decodeReadDiagnostics(d *decoder) Arguments {
	return ReadDiagnosticsArgs{
		TabID:  d.tabID(),
		Source: enum(d, "source", SourceConsole, SourceNetwork),
		Limit:  d.integer("limit", 1, MaxDiagnosticsLimit),
	}
}

func decodeRunScript(d *decoder) Arguments {
	a := RunScriptArgs{TabID: d.tabID(), Source: d.str("source")}
	d.nonEmpty("source", a.Source, 0)
	a.TimeoutMS = d.integer("timeout_ms", 1, MaxTimeoutMS)
	return a
}

func decodeUploadFile(d *decoder) Arguments {
	return UploadFileArgs{GrantID: d.nonEmpty("grant_id", d.str("grant_id"), MaxGrantBytes)}
}

func decodeDownloadFile(d *decoder) Arguments {
	return DownloadFileArgs{GrantID: d.nonEmpty("grant_id", d.str("grant_id"), MaxGrantBytes)}
}
