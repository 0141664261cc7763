package bench

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/jezek/xgb/xproto"
)

func xauthEntry(name string, data []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, uint16(0xffff))
	for _, f := range [][]byte{[]byte("host"), []byte("3"), []byte(name), data} {
		_ = binary.Write(&b, binary.BigEndian, uint16(len(f)))
		b.Write(f)
	}
	return b.Bytes()
}

func TestReadCookieSkipsOtherProtocols(t *testing.T) {
	path := filepath.Join(t.TempDir(), "Xauthority")
	data := append(xauthEntry("XDM-AUTHORIZATION-1", []byte("other")), xauthEntry("MIT-MAGIC-COOKIE-1", []byte("0123456789abcdef"))...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readCookie(path)
	if err != nil || string(got) != "0123456789abcdef" {
		t.Fatalf("readCookie = %q, %v", got, err)
	}
	if err := os.WriteFile(path, data[:5], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readCookie(path); err == nil {
		t.Fatal("a truncated file was accepted")
	}
}

func TestKeymapChar(t *testing.T) {
	// Keycodes 10..12: a/A, 1/!, and a lone b (both cases by rule).
	k := keymap{minCode: 10, per: 2, syms: []xproto.Keysym{'a', 'A', '1', '!', 'b', 0}}
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
		if got := k.char(tc.code, tc.state); got != tc.want {
			t.Errorf("char(%d, %#x) = %q, want %q", tc.code, tc.state, got, tc.want)
		}
	}
	if keysymRune(0xff0d) != '\n' || keysymRune(0x010020ac) != '€' || keysymRune(0xffe1) != 0 {
		t.Error("keysymRune: Return, a Unicode keysym, Shift_L")
	}
}
