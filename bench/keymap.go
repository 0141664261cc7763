package bench

import (
	"fmt"
	"unicode"

	"github.com/jezek/xgb/xproto"
)

// keymap is the core keyboard mapping, to read which character a key
// press types (the same rules as internal/xrecorder, which tests use).
type keymap struct {
	minCode int
	per     int
	syms    []xproto.Keysym
}

func (d *desktop) loadKeymap() error {
	setup := xproto.Setup(d.conn)
	n := int(setup.MaxKeycode) - int(setup.MinKeycode) + 1
	rep, err := xproto.GetKeyboardMapping(d.conn, setup.MinKeycode, byte(n)).Reply()
	if err != nil {
		return fmt.Errorf("read keyboard mapping: %w", err)
	}
	d.mu.Lock()
	d.keys = keymap{minCode: int(setup.MinKeycode), per: int(rep.KeysymsPerKeycode), syms: rep.Keysyms}
	d.mu.Unlock()
	return nil
}

// char is the character keycode types with modifier state, 0 if none:
// level 1 with Shift, Caps Lock upper-casing letters, a lone keysym
// standing for both cases of a letter.
func (k keymap) char(code int, state uint16) rune {
	i := (code - k.minCode) * k.per
	if k.per == 0 || i < 0 || i+k.per > len(k.syms) {
		return 0
	}
	lower, upper := keysymRune(uint32(k.syms[i])), rune(0)
	if k.per > 1 {
		upper = keysymRune(uint32(k.syms[i+1]))
	}
	if upper == 0 {
		upper = unicode.ToUpper(lower)
	}
	r := lower
	if state&xproto.ModMaskShift != 0 {
		r = upper
	}
	if state&xproto.ModMaskLock != 0 {
		r = unicode.ToUpper(r)
	}
	return r
}

// keysymRune is the character of a Latin-1 or Unicode keysym, or of Return
// and Tab; 0 for others.
func keysymRune(sym uint32) rune {
	switch {
	case sym == 0xff0d || sym == 0xff8d: // Return, KP_Enter
		return '\n'
	case sym == 0xff09: // Tab
		return '\t'
	case sym >= 0x20 && sym < 0x7f, sym >= 0xa0 && sym <= 0xff:
		return rune(sym)
	case sym >= 0x01000100 && sym <= 0x0110ffff:
		return rune(sym - 0x01000000)
	}
	return 0
}
