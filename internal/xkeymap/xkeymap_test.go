package xkeymap

import (
	"testing"

	"github.com/jezek/xgb/xproto"
)

func TestRune(t *testing.T) {
	// Keycodes 10..12: a/A, 1/!, and a lone b (both cases by rule).
	m := New(10, 2, []xproto.Keysym{'a', 'A', '1', '!', 'b', 0})
	for _, tc := range []struct {
		code  int
		state uint16
		want  rune
	}{
		{10, 0, 'a'}, {10, xproto.ModMaskShift, 'A'}, {10, xproto.ModMaskLock, 'A'},
		{11, 0, '1'}, {11, xproto.ModMaskShift, '!'}, {11, xproto.ModMaskLock, '1'},
		{12, 0, 'b'}, {12, xproto.ModMaskShift, 'B'},
		{9, 0, 0}, {13, 0, 0},
	} {
		if got := m.Rune(tc.code, tc.state); got != tc.want {
			t.Errorf("Rune(%d, %#x) = %q, want %q", tc.code, tc.state, got, tc.want)
		}
	}
}

func TestKeysymRune(t *testing.T) {
	for sym, want := range map[uint32]rune{
		'a': 'a', 0xe9: 'é', 0xff0d: '\n', 0xff09: '\t', 0x1006771: '東', 0x101f642: '🙂', 0x20ac: '€',
		0xffe1: 0, 0xffbe: 0,
	} {
		if got := KeysymRune(sym); got != want {
			t.Errorf("KeysymRune(%#x) = %q, want %q", sym, got, want)
		}
	}
	if lo, up := caseOf(0xe9); lo != 0xe9 || up != 0xc9 {
		t.Errorf("caseOf(é) = %#x, %#x", lo, up)
	}
	if lo, up := caseOf(0x1000141); lo != 0x1000142 || up != 0x1000141 {
		t.Errorf("caseOf(Ł) = %#x, %#x", lo, up)
	}
}
