package browser

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Role is an element's role in a structured read.
type Role string

// The seven roles of a structured read.
const (
	RoleButton   Role = "button"
	RoleTextbox  Role = "textbox"
	RoleCombobox Role = "combobox"
	RoleCheckbox Role = "checkbox"
	RoleRadio    Role = "radio"
	RoleSlider   Role = "slider"
	RoleListbox  Role = "listbox"
)

// Omitted is a code a structured read uses to say its coverage is partial.
type Omitted string

// The codes of BrowserReadV1.Omitted.
const (
	OmittedReportLimit        Omitted = "report_limit"
	OmittedTextLimit          Omitted = "text_limit"
	OmittedTargetLimit        Omitted = "target_limit"
	OmittedWorkLimit          Omitted = "work_limit"
	OmittedFrameLimit         Omitted = "frame_limit"
	OmittedUnsupportedRoot    Omitted = "unsupported_root"
	OmittedUnsupportedControl Omitted = "unsupported_control"
	OmittedRemoteAction       Omitted = "remote_action"
	OmittedPrivate            Omitted = "private"
	OmittedValue              Omitted = "value"
	OmittedNameLimit          Omitted = "name_limit"
)

// Limits of a structured read, in bytes of UTF-8.
const (
	// MaxRefBytes bounds element refs, scope refs and labels.
	MaxRefBytes = 256
	// MaxValueBytes bounds values.
	MaxValueBytes = 512
)

var (
	roles = map[Role]bool{RoleButton: true, RoleTextbox: true, RoleCombobox: true, RoleCheckbox: true,
		RoleRadio: true, RoleSlider: true, RoleListbox: true}
	omittedCodes = map[Omitted]bool{OmittedReportLimit: true, OmittedTextLimit: true, OmittedTargetLimit: true,
		OmittedWorkLimit: true, OmittedFrameLimit: true, OmittedUnsupportedRoot: true, OmittedUnsupportedControl: true,
		OmittedRemoteAction: true, OmittedPrivate: true, OmittedValue: true, OmittedNameLimit: true}
	// Which roles may carry which optional fields; the toolset drops the
	// fields elsewhere.
	valueRoles   = map[Role]bool{RoleTextbox: true, RoleCombobox: true, RoleSlider: true, RoleListbox: true}
	optionRoles  = map[Role]bool{RoleCombobox: true, RoleListbox: true}
	checkedRoles = map[Role]bool{RoleCheckbox: true, RoleRadio: true}
)

// BrowserReadV1 is a structured page read (read_page, find, get_page_text;
// read_diagnostics with no elements). The toolset does not limit the number
// of elements or options or the size of the text; the driver is responsible
// for visibility, the privacy of fields and the validity of refs.
type BrowserReadV1 struct {
	// Version is 1.
	Version int `json:"version"`
	// Text is the visible text.
	Text     string    `json:"text"`
	Elements []Element `json:"elements"`
	// Omitted lists, without repeats, why coverage is partial.
	Omitted []Omitted `json:"omitted"`
}

// Element is a control in a structured read: a unique non-empty Ref (at most
// MaxRefBytes), a non-empty Label (at most MaxRefBytes) and one of the seven
// roles. Value and Options are reported only when the application lets the
// model see them; the toolset keeps Value for textbox, combobox, slider and
// listbox, Options for combobox and listbox, Checked for checkbox and radio,
// ElementOption.Selected for listbox, and drops them on other roles.
type Element struct {
	Ref     string          `json:"ref"`
	Label   string          `json:"label"`
	Role    Role            `json:"role"`
	Value   *string         `json:"value,omitempty"`
	Options []ElementOption `json:"options,omitempty"`
	Checked *bool           `json:"checked,omitempty"`
}

// ElementOption is a label and value pair of a combobox or listbox.
type ElementOption struct {
	Label    string `json:"label"`
	Value    string `json:"value"`
	Selected *bool  `json:"selected,omitempty"`
}

// Scope is a section of the page read_page_scoped can use as its root.
type Scope struct {
	Ref   string `json:"ref"`
	Label string `json:"label"`
}

// BrowserScopedReadV1 is read_page_scoped's result: a structured read plus
// the scopes, whose refs are unique and distinct from every element ref.
type BrowserScopedReadV1 struct {
	BrowserReadV1
	Scopes []Scope `json:"scopes"`
}

// ReadResult is what read_page, find and get_page_text return: text, a
// structured read, or neither (the output then carries only the updated
// state). Set at most one. An empty Text is a read that found no text.
type ReadResult struct {
	Text *string
	Read *BrowserReadV1
}

// TextRead is a ReadResult of text.
func TextRead(s string) ReadResult { return ReadResult{Text: &s} }

// StructuredRead is a ReadResult of a structured read.
func StructuredRead(r BrowserReadV1) ReadResult { return ReadResult{Read: &r} }

// ErrInvalidResult is matched (errors.Is) by the error of a result a driver
// returned that breaks the contract; it stops the run.
var ErrInvalidResult = errors.New("invalid browser result")

func invalidResult(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidResult, fmt.Sprintf(format, args...))
}

// checkText checks a string is valid UTF-8 and, if limit > 0, at most limit
// bytes; nonEmpty also refuses "".
func checkText(what, s string, nonEmpty bool, limit int) error {
	switch {
	case !utf8.ValidString(s):
		return invalidResult("%s is not valid UTF-8", what)
	case nonEmpty && s == "":
		return invalidResult("%s is empty", what)
	case limit > 0 && len(s) > limit:
		return invalidResult("%s is %d bytes, over %d", what, len(s), limit)
	}
	return nil
}

// copyRead validates r and returns the copy the toolset reports.
func copyRead(r BrowserReadV1) (BrowserReadV1, error) {
	if r.Version != 1 {
		return BrowserReadV1{}, invalidResult("structured read version is %d, not 1", r.Version)
	}
	if err := checkText("text", r.Text, false, 0); err != nil {
		return BrowserReadV1{}, err
	}
	out := BrowserReadV1{Version: 1, Text: r.Text, Elements: make([]Element, 0, len(r.Elements)),
		Omitted: make([]Omitted, 0, len(r.Omitted))}
	refs := make(map[string]bool, len(r.Elements))
	for i, e := range r.Elements {
		ce, err := copyElement(e)
		if err != nil {
			return BrowserReadV1{}, fmt.Errorf("element %d: %w", i, err)
		}
		if refs[e.Ref] {
			return BrowserReadV1{}, invalidResult("element %d: duplicate ref %q", i, e.Ref)
		}
		refs[e.Ref] = true
		out.Elements = append(out.Elements, ce)
	}
	seen := map[Omitted]bool{}
	for _, o := range r.Omitted {
		if !omittedCodes[o] {
			return BrowserReadV1{}, invalidResult("unknown omitted code %q", o)
		}
		if seen[o] {
			return BrowserReadV1{}, invalidResult("omitted code %q repeated", o)
		}
		seen[o] = true
		out.Omitted = append(out.Omitted, o)
	}
	return out, nil
}

func copyElement(e Element) (Element, error) {
	if err := checkText("ref", e.Ref, true, MaxRefBytes); err != nil {
		return Element{}, err
	}
	if err := checkText("label", e.Label, true, MaxRefBytes); err != nil {
		return Element{}, err
	}
	if !roles[e.Role] {
		return Element{}, invalidResult("unknown role %q", e.Role)
	}
	out := Element{Ref: e.Ref, Label: e.Label, Role: e.Role}
	if e.Value != nil && valueRoles[e.Role] {
		if err := checkText("value", *e.Value, false, MaxValueBytes); err != nil {
			return Element{}, err
		}
		out.Value = cloneString(e.Value)
	}
	if len(e.Options) > 0 && optionRoles[e.Role] {
		out.Options = make([]ElementOption, 0, len(e.Options))
		for j, o := range e.Options {
			if err := checkText(fmt.Sprintf("option %d label", j), o.Label, false, MaxRefBytes); err != nil {
				return Element{}, err
			}
			if err := checkText(fmt.Sprintf("option %d value", j), o.Value, false, MaxValueBytes); err != nil {
				return Element{}, err
			}
			co := ElementOption{Label: o.Label, Value: o.Value}
			if o.Selected != nil && e.Role == RoleListbox {
				sel := *o.Selected
				co.Selected = &sel
			}
			out.Options = append(out.Options, co)
		}
	}
	if e.Checked != nil && checkedRoles[e.Role] {
		c := *e.Checked
		out.Checked = &c
	}
	return out, nil
}

// copyScopedRead validates r and returns the copy the toolset reports.
func copyScopedRead(r *BrowserScopedReadV1) (*BrowserScopedReadV1, error) {
	if r == nil {
		return nil, invalidResult("read_page_scoped returned no read")
	}
	base, err := copyRead(r.BrowserReadV1)
	if err != nil {
		return nil, err
	}
	out := &BrowserScopedReadV1{BrowserReadV1: base, Scopes: make([]Scope, 0, len(r.Scopes))}
	elementRefs := make(map[string]bool, len(base.Elements))
	for _, e := range base.Elements {
		elementRefs[e.Ref] = true
	}
	scopeRefs := make(map[string]bool, len(r.Scopes))
	for i, s := range r.Scopes {
		if err := checkText(fmt.Sprintf("scope %d ref", i), s.Ref, true, MaxRefBytes); err != nil {
			return nil, err
		}
		if err := checkText(fmt.Sprintf("scope %d label", i), s.Label, true, MaxRefBytes); err != nil {
			return nil, err
		}
		if scopeRefs[s.Ref] {
			return nil, invalidResult("scope %d: duplicate ref %q", i, s.Ref)
		}
		if elementRefs[s.Ref] {
			return nil, invalidResult("scope %d: ref %q is also an element ref", i, s.Ref)
		}
		scopeRefs[s.Ref] = true
		out.Scopes = append(out.Scopes, Scope{Ref: s.Ref, Label: s.Label})
	}
	return out, nil
}
