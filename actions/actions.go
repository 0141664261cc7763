// Package actions defines the computer tool's actions as typed values: strict
// JSON decoding, validation with clear messages and key-name parsing, in pure
// Go; package executor performs them on an input.Device.
//
// Field names are the API's own (snake_case). Anything the driver could not
// perform faithfully is an error here, before any action of a batch runs.
package actions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Type names an action as the computer tool does.
type Type string

// The action types of the computer tool.
const (
	Click       Type = "click"
	DoubleClick Type = "double_click"
	Drag        Type = "drag"
	Keypress    Type = "keypress"
	Move        Type = "move"
	Scroll      Type = "scroll"
	TypeText    Type = "type"
	Wait        Type = "wait"
	Screenshot  Type = "screenshot"
)

// Button names a mouse button as the computer tool does.
type Button string

// The buttons the computer tool may ask for.
const (
	Left    Button = "left"
	Right   Button = "right"
	Middle  Button = "middle"
	Back    Button = "back"
	Forward Button = "forward"
	// Wheel is what models sometimes send for a click of the wheel; it is
	// accepted as a synonym of Middle.
	Wheel Button = "wheel"
)

// Point is a position in the coordinate space of the request (image space on
// the host, screen space once the daemon has mapped it).
type Point struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// Action is one computer-tool action. Only the fields of its Type are set;
// Decode rejects fields that belong to other types.
type Action struct {
	Type    Type     `json:"type"`
	X       int      `json:"x"`
	Y       int      `json:"y"`
	Button  Button   `json:"button"`
	Keys    []string `json:"keys"`
	Path    []Point  `json:"path"`
	ScrollX int      `json:"scroll_x"`
	ScrollY int      `json:"scroll_y"`
	Text    string   `json:"text"`
}

// fieldSpec lists, per type, the fields that must be present and those that
// may be present. "type" is implied.
type fieldSpec struct{ required, optional []string }

var specs = map[Type]fieldSpec{
	Click:       {required: []string{"x", "y"}, optional: []string{"button", "keys"}},
	DoubleClick: {required: []string{"x", "y"}, optional: []string{"keys"}},
	Drag:        {required: []string{"path"}, optional: []string{"keys"}},
	Keypress:    {required: []string{"keys"}},
	Move:        {required: []string{"x", "y"}, optional: []string{"keys"}},
	Scroll:      {required: []string{"x", "y", "scroll_x", "scroll_y"}, optional: []string{"keys"}},
	TypeText:    {required: []string{"text"}},
	Wait:        {},
	Screenshot:  {},
}

// Types lists every action type, in a stable order.
func Types() []Type {
	return []Type{Click, DoubleClick, Drag, Keypress, Move, Scroll, TypeText, Wait, Screenshot}
}

// Decode parses one action strictly: the type must be known, every required
// field present, no field of another type or unknown field present, and the
// values valid (see Validate).
func Decode(data []byte) (Action, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Action{}, fmt.Errorf("action is not a JSON object: %w", err)
	}
	if raw == nil {
		return Action{}, errors.New("action is null")
	}
	typeRaw, ok := raw["type"]
	if !ok {
		return Action{}, errors.New(`action has no "type"`)
	}
	var t Type
	if err := json.Unmarshal(typeRaw, &t); err != nil {
		return Action{}, fmt.Errorf(`action "type" is not a string`)
	}
	spec, ok := specs[t]
	if !ok {
		return Action{}, fmt.Errorf("unknown action type %q (known: %s)", t, typeList())
	}
	allowed := map[string]bool{"type": true}
	for _, f := range spec.required {
		allowed[f] = true
		if _, ok := raw[f]; !ok {
			return Action{}, fmt.Errorf("%s: missing field %q", t, f)
		}
	}
	for _, f := range spec.optional {
		allowed[f] = true
	}
	var extra []string
	for f := range raw {
		if !allowed[f] {
			extra = append(extra, f)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return Action{}, fmt.Errorf("%s: unexpected field %q", t, extra[0])
	}
	// plain has Action's fields without its methods, so decoding it does not
	// recurse into UnmarshalJSON.
	type plain Action
	var p plain
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Action{}, fmt.Errorf("%s: %w", t, fieldError(err))
	}
	a := Action(p)
	if err := a.Validate(); err != nil {
		return Action{}, err
	}
	return a, nil
}

// UnmarshalJSON decodes strictly, as Decode does, so every message that
// carries actions (the wire protocol, a CLI argument) gets the same checks.
// Its error is an *Error (index 0; a List sets the index).
func (a *Action) UnmarshalJSON(data []byte) error {
	v, err := Decode(data)
	if err != nil {
		return &Error{Err: err}
	}
	*a = v
	return nil
}

// Error is an action that did not decode, and where it was.
type Error struct {
	// Index is the action's position in its List (0 for a single action).
	Index int
	Err   error
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// List is a JSON array of actions decoded strictly; an error is an *Error
// naming the first bad action's index.
type List []Action

// UnmarshalJSON implements json.Unmarshaler.
func (l *List) UnmarshalJSON(data []byte) error {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return fmt.Errorf("actions must be a JSON array: %w", err)
	}
	out := make(List, 0, len(raws))
	for i, r := range raws {
		a, err := Decode(r)
		if err != nil {
			return &Error{Index: i, Err: err}
		}
		out = append(out, a)
	}
	*l = out
	return nil
}

// DecodeList parses a JSON array of actions, or a single action object, and
// names the index of the first bad one.
func DecodeList(data []byte) ([]Action, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		a, err := Decode(trimmed)
		if err != nil {
			return nil, err
		}
		return []Action{a}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(trimmed, &raws); err != nil {
		return nil, fmt.Errorf("actions must be a JSON array or object: %w", err)
	}
	out := make([]Action, 0, len(raws))
	for i, r := range raws {
		a, err := Decode(r)
		if err != nil {
			return nil, fmt.Errorf("action %d: %w", i, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// fieldError turns encoding/json's type errors into a message that names the
// field without Go type names.
func fieldError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("field %q has the wrong type (got JSON %s)", te.Field, te.Value)
	}
	return err
}

func typeList() string {
	names := make([]string, 0, len(specs))
	for _, t := range Types() {
		names = append(names, string(t))
	}
	return strings.Join(names, ", ")
}

// MaxTextLen bounds one type action (in bytes) so a single request cannot
// keep the keyboard busy for minutes.
const MaxTextLen = 64 << 10

// MaxPathLen bounds the points of one drag.
const MaxPathLen = 1024

// Validate checks the values of an action whose fields are already known to
// be the right ones for its type. Coordinates are checked against a screen or
// image by the caller that knows its size (see scaling).
func (a Action) Validate() error {
	switch a.Type {
	case Click:
		if _, err := ParseButton(a.Button); err != nil {
			return fmt.Errorf("click: %w", err)
		}
	case Drag:
		if len(a.Path) < 2 {
			return fmt.Errorf("drag: path needs at least 2 points, got %d", len(a.Path))
		}
		if len(a.Path) > MaxPathLen {
			return fmt.Errorf("drag: path has %d points, at most %d allowed", len(a.Path), MaxPathLen)
		}
	case Keypress:
		if len(a.Keys) == 0 {
			return errors.New("keypress: keys is empty")
		}
	case TypeText:
		if len(a.Text) > MaxTextLen {
			return fmt.Errorf("type: text is %d bytes, at most %d allowed", len(a.Text), MaxTextLen)
		}
		if !utf8Valid(a.Text) {
			return errors.New("type: text is not valid UTF-8")
		}
		if err := checkTypable(a.Text); err != nil {
			return fmt.Errorf("type: %w", err)
		}
	case DoubleClick, Move, Scroll, Wait, Screenshot:
	default:
		return fmt.Errorf("unknown action type %q (known: %s)", a.Type, typeList())
	}
	if _, err := ParseKeys(a.Keys); err != nil {
		return fmt.Errorf("%s: %w", a.Type, err)
	}
	return nil
}

// Points returns the coordinates an action touches, for bounds checks and
// scaling. It is empty for actions without coordinates.
func (a Action) Points() []Point {
	switch a.Type {
	case Click, DoubleClick, Move, Scroll:
		return []Point{{a.X, a.Y}}
	case Drag:
		return a.Path
	}
	return nil
}

// WithPoints returns a copy of a whose coordinates are replaced by pts, in the
// order Points returned them.
func (a Action) WithPoints(pts []Point) Action {
	switch a.Type {
	case Click, DoubleClick, Move, Scroll:
		a.X, a.Y = pts[0].X, pts[0].Y
	case Drag:
		a.Path = append([]Point(nil), pts...)
	}
	return a
}

// MarshalJSON writes only the fields of the action's type, so an encoded
// action decodes again under Decode's strict rules.
func (a Action) MarshalJSON() ([]byte, error) {
	m := map[string]any{"type": a.Type}
	spec := specs[a.Type]
	for _, f := range append(append([]string(nil), spec.required...), spec.optional...) {
		switch f {
		case "x":
			m[f] = a.X
		case "y":
			m[f] = a.Y
		case "button":
			if a.Button != "" {
				m[f] = a.Button
			}
		case "keys":
			if a.Keys != nil || a.Type == Keypress {
				m[f] = a.Keys
			}
		case "path":
			m[f] = a.Path
		case "scroll_x":
			m[f] = a.ScrollX
		case "scroll_y":
			m[f] = a.ScrollY
		case "text":
			m[f] = a.Text
		}
	}
	return json.Marshal(m)
}

// String is a short, safe summary for progress output: it never includes
// typed text, only its length.
func (a Action) String() string {
	mods := ""
	if len(a.Keys) > 0 && a.Type != Keypress {
		mods = " +" + strings.Join(a.Keys, "+")
	}
	switch a.Type {
	case Click:
		b := a.Button
		if b == "" {
			b = Left
		}
		return fmt.Sprintf("click %s (%d,%d)%s", b, a.X, a.Y, mods)
	case DoubleClick:
		return fmt.Sprintf("double_click (%d,%d)%s", a.X, a.Y, mods)
	case Drag:
		if len(a.Path) == 0 {
			return "drag (no path)" + mods
		}
		first, last := a.Path[0], a.Path[len(a.Path)-1]
		return fmt.Sprintf("drag (%d,%d)→(%d,%d) %d points%s", first.X, first.Y, last.X, last.Y, len(a.Path), mods)
	case Keypress:
		return "keypress " + strings.Join(a.Keys, "+")
	case Move:
		return fmt.Sprintf("move (%d,%d)%s", a.X, a.Y, mods)
	case Scroll:
		return fmt.Sprintf("scroll (%d,%d) by (%d,%d)%s", a.X, a.Y, a.ScrollX, a.ScrollY, mods)
	case TypeText:
		return fmt.Sprintf("type %d chars", len([]rune(a.Text)))
	}
	return string(a.Type)
}
