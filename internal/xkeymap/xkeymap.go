// Package xkeymap reads which keysym, and which character, an X key event
// stands for: the core protocol's keyboard mapping, first group. Test X
// clients that record what they receive (internal/xrecorder, the bench's
// desktop) check typed text with it.
package xkeymap

import (
	"fmt"
	"unicode"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// Map is a keyboard mapping as the server reported it.
type Map struct {
	minCode int
	per     int
	syms    []xproto.Keysym
}

// Load reads the server's current keyboard mapping.
func Load(conn *xgb.Conn) (Map, error) {
	setup := xproto.Setup(conn)
	n := int(setup.MaxKeycode) - int(setup.MinKeycode) + 1
	rep, err := xproto.GetKeyboardMapping(conn, setup.MinKeycode, byte(n)).Reply()
	if err != nil {
		return Map{}, fmt.Errorf("read keyboard mapping: %w", err)
	}
	return Map{minCode: int(setup.MinKeycode), per: int(rep.KeysymsPerKeycode), syms: rep.Keysyms}, nil
}

// New is a mapping from its parts: the first keycode, keysyms per keycode
// and the keysyms (for tests).
func New(minCode, perKeycode int, syms []xproto.Keysym) Map {
	return Map{minCode: minCode, per: perKeycode, syms: syms}
}

// Keysym applies the core protocol's rules for the first group: level 1 with
// Shift, Caps Lock upper-casing letters, a lone keysym standing for both
// levels (its lower and upper case if it has any). 0 for an unmapped code.
func (m Map) Keysym(code int, state uint16) uint32 {
	i := (code - m.minCode) * m.per
	if m.per == 0 || i < 0 || i+m.per > len(m.syms) {
		return 0
	}
	lower, upper := uint32(m.syms[i]), uint32(0)
	if m.per > 1 {
		upper = uint32(m.syms[i+1])
	}
	if upper == 0 {
		lower, upper = caseOf(lower)
	}
	sym := lower
	if state&xproto.ModMaskShift != 0 {
		sym = upper
	}
	if state&xproto.ModMaskLock != 0 {
		_, up := caseOf(sym)
		sym = up
	}
	return sym
}

// Rune is the character code types with modifier state, 0 if none.
func (m Map) Rune(code int, state uint16) rune { return KeysymRune(m.Keysym(code, state)) }

// caseOf returns the lower- and upper-case keysyms of a letter keysym, or
// the keysym twice.
func caseOf(sym uint32) (uint32, uint32) {
	r := KeysymRune(sym)
	if r == 0 || !unicode.IsLetter(r) {
		return sym, sym
	}
	return runeKeysym(unicode.ToLower(r)), runeKeysym(unicode.ToUpper(r))
}

// KeysymRune is the character a keysym types: Latin-1 and Unicode keysyms,
// Return and Tab (keypad and others are 0).
func KeysymRune(sym uint32) rune {
	switch {
	case sym == 0xff0d || sym == 0xff8d: // Return, KP_Enter
		return '\n'
	case sym == 0xff09: // Tab
		return '\t'
	case sym >= 0x20 && sym < 0x7f, sym >= 0xa0 && sym <= 0xff:
		return rune(sym)
	case sym >= 0x01000100 && sym <= 0x0110ffff:
		return rune(sym - 0x01000000)
	case sym == 0x20ac: // EuroSign, a legacy keysym in common layouts
		return '€'
	}
	return 0
}

func runeKeysym(r rune) uint32 {
	if (r >= 0x20 && r < 0x7f) || (r >= 0xa0 && r <= 0xff) {
		return uint32(r)
	}
	return 0x01000000 | uint32(r)
}
