package browser

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// A strict JSON reader for the model's arguments. encoding/json is not used
// because it quietly replaces invalid UTF-8 and lone surrogates (\ud800) with
// U+FFFD, keeps the last of duplicate keys and turns numbers into float64,
// while the contract wants valid Unicode scalar values, exact safe integers
// and no ambiguity about which field was meant.

type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

func (k jsonKind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// jsonValue is one parsed value. Objects keep their members in order.
type jsonValue struct {
	kind jsonKind
	// text is a string's value or a number's literal.
	text  string
	b     bool
	items []jsonValue
	keys  []string
	vals  []jsonValue
}

// maxJSONDepth bounds nesting; the deepest argument is a point inside a
// path inside the arguments object (depth 3).
const maxJSONDepth = 16

type jsonParser struct {
	data []byte
	pos  int
}

// parseJSON parses exactly one JSON value (RFC 8259) with surrounding
// whitespace, refusing invalid UTF-8, lone surrogates, duplicate object keys
// and nesting deeper than maxJSONDepth.
func parseJSON(data []byte) (jsonValue, error) {
	p := &jsonParser{data: data}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return jsonValue{}, err
	}
	p.space()
	if p.pos != len(p.data) {
		return jsonValue{}, p.errorf("unexpected data after the value")
	}
	return v, nil
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *jsonParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (jsonValue, error) {
	if p.pos >= len(p.data) {
		return jsonValue{}, p.errorf("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.string()
		return jsonValue{kind: jsonString, text: s}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case p.literal("true"):
		return jsonValue{kind: jsonBool, b: true}, nil
	case p.literal("false"):
		return jsonValue{kind: jsonBool}, nil
	case p.literal("null"):
		return jsonValue{kind: jsonNull}, nil
	}
	return jsonValue{}, p.errorf("unexpected character %q", p.data[p.pos])
}

func (p *jsonParser) literal(word string) bool {
	if len(p.data)-p.pos >= len(word) && string(p.data[p.pos:p.pos+len(word)]) == word {
		p.pos += len(word)
		return true
	}
	return false
}

func (p *jsonParser) object(depth int) (jsonValue, error) {
	v := jsonValue{kind: jsonObject}
	seen := map[string]bool{}
	err := p.members(depth, '}', "an object", func() error {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return p.errorf("expected a field name")
		}
		key, err := p.string()
		if err != nil {
			return err
		}
		if seen[key] {
			return p.errorf("duplicate field %q", key)
		}
		seen[key] = true
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return p.errorf("expected ':' after field %q", key)
		}
		p.pos++
		p.space()
		val, err := p.value(depth)
		if err != nil {
			return err
		}
		v.keys = append(v.keys, key)
		v.vals = append(v.vals, val)
		return nil
	})
	if err != nil {
		return jsonValue{}, err
	}
	return v, nil
}

func (p *jsonParser) array(depth int) (jsonValue, error) {
	v := jsonValue{kind: jsonArray}
	err := p.members(depth, ']', "an array", func() error {
		item, err := p.value(depth)
		if err != nil {
			return err
		}
		v.items = append(v.items, item)
		return nil
	})
	if err != nil {
		return jsonValue{}, err
	}
	return v, nil
}

// members parses an object or an array (in names it in errors) from its
// opening bracket through close, its closing one, calling member for each
// member at its first character.
func (p *jsonParser) members(depth int, close byte, in string, member func() error) error {
	if depth > maxJSONDepth {
		return p.errorf("nested deeper than %d levels", maxJSONDepth)
	}
	p.pos++ // the opening bracket
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == close {
		p.pos++
		return nil
	}
	for {
		p.space()
		if err := member(); err != nil {
			return err
		}
		p.space()
		if p.pos >= len(p.data) {
			return p.errorf("unexpected end of input in %s", in)
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case close:
			p.pos++
			return nil
		default:
			return p.errorf("expected ',' or '%c' in %s", close, in)
		}
	}
}

func (p *jsonParser) string() (string, error) {
	p.pos++ // opening quote
	var out []byte
	for {
		if p.pos >= len(p.data) {
			return "", p.errorf("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(out), nil
		case c < 0x20:
			return "", p.errorf("control character %#02x in a string", c)
		case c == '\\':
			r, err := p.escape()
			if err != nil {
				return "", err
			}
			out = utf8.AppendRune(out, r)
		case c < utf8.RuneSelf:
			out = append(out, c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.errorf("invalid UTF-8 in a string")
			}
			out = append(out, p.data[p.pos:p.pos+size]...)
			p.pos += size
		}
	}
}

// escape reads one escape sequence; a \u surrogate must come as a pair.
func (p *jsonParser) escape() (rune, error) {
	if p.pos+1 >= len(p.data) {
		return 0, p.errorf("unterminated escape")
	}
	c := p.data[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		r, err := p.hex4()
		if err != nil {
			return 0, err
		}
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return 0, p.errorf("lone low surrogate \\u%04x", r)
		case r >= 0xD800 && r <= 0xDBFF:
			if !(p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u') {
				return 0, p.errorf("lone high surrogate \\u%04x", r)
			}
			p.pos += 2
			low, err := p.hex4()
			if err != nil {
				return 0, err
			}
			if low < 0xDC00 || low > 0xDFFF {
				return 0, p.errorf("high surrogate \\u%04x not followed by a low one", r)
			}
			return utf16.DecodeRune(r, low), nil
		}
		return r, nil
	}
	return 0, p.errorf("invalid escape \\%c", c)
}

func (p *jsonParser) hex4() (rune, error) {
	if len(p.data)-p.pos < 4 {
		return 0, p.errorf("short \\u escape")
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, p.errorf("invalid hex digit %q in a \\u escape", c)
		}
	}
	p.pos += 4
	return r, nil
}

// number checks the RFC 8259 number grammar and keeps the literal; its value
// is judged later, exactly (safeInteger).
func (p *jsonParser) number() (jsonValue, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == '0':
		p.pos++
	case digits() == 0:
		return jsonValue{}, p.errorf("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return jsonValue{}, p.errorf("invalid number: no digits after '.'")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return jsonValue{}, p.errorf("invalid number: no digits in the exponent")
		}
	}
	return jsonValue{kind: jsonNumber, text: string(p.data[start:p.pos])}, nil
}

// MaxSafeInteger is the largest integer a JSON number can carry exactly
// everywhere (2^53 − 1, JavaScript's Number.MAX_SAFE_INTEGER).
const MaxSafeInteger = 1<<53 - 1

var errNotSafeInteger = errors.New("must be a safe integer (a whole number of magnitude at most 2^53-1)")

// safeInteger gives the exact value of a JSON number literal (already
// checked against the grammar) when it is an integer of magnitude at most
// MaxSafeInteger. Unlike parsing as float64, it never rounds: 1.0 and 1e2
// are integers, 0.99999999999999999999 is not 1.
func safeInteger(lit string) (int64, error) {
	neg := false
	if lit != "" && lit[0] == '-' {
		neg, lit = true, lit[1:]
	}
	mant, exp := lit, ""
	for i := 0; i < len(lit); i++ {
		if lit[i] == 'e' || lit[i] == 'E' {
			mant, exp = lit[:i], lit[i+1:]
			break
		}
	}
	intPart, frac := mant, ""
	for i := 0; i < len(mant); i++ {
		if mant[i] == '.' {
			intPart, frac = mant[:i], mant[i+1:]
			break
		}
	}
	// The value is digits × 10^scale.
	digits := trimLeadingZeros(intPart + frac)
	scale := -int64(len(frac))
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		scale++
	}
	if digits == "" {
		return 0, nil // any spelling of zero, -0 included
	}
	if exp != "" {
		e, ok := smallExponent(exp)
		if !ok {
			// |exponent| beyond any sane size: a huge value, or a tiny
			// non-zero fraction.
			return 0, errNotSafeInteger
		}
		scale += e
	}
	if scale < 0 || int64(len(digits))+scale > 16 {
		return 0, errNotSafeInteger
	}
	var v int64
	for i := 0; i < len(digits); i++ {
		v = v*10 + int64(digits[i]-'0')
	}
	for range scale {
		v *= 10
	}
	if v > MaxSafeInteger {
		return 0, errNotSafeInteger
	}
	if neg {
		v = -v
	}
	return v, nil
}

func trimLeadingZeros(s string) string {
	for len(s) > 0 && s[0] == '0' {
		s = s[1:]
	}
	return s
}

// smallExponent parses a signed decimal exponent of up to 18 digits. A
// longer one exceeds the length of any input, so no digits of the literal
// can balance it: the value is huge, or a non-zero fraction.
func smallExponent(s string) (int64, bool) {
	neg := false
	switch {
	case s == "":
		return 0, false
	case s[0] == '+':
		s = s[1:]
	case s[0] == '-':
		neg, s = true, s[1:]
	}
	s = trimLeadingZeros(s)
	if len(s) > 18 {
		return 0, false
	}
	var e int64
	for i := 0; i < len(s); i++ {
		e = e*10 + int64(s[i]-'0')
	}
	if neg {
		e = -e
	}
	return e, true
}
