package xauth

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

func entry(name string, data []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, uint16(0xffff))
	for _, f := range [][]byte{[]byte("host"), []byte("3"), []byte(name), data} {
		_ = binary.Write(&b, binary.BigEndian, uint16(len(f)))
		b.Write(f)
	}
	return b.Bytes()
}

func TestCookieSkipsOtherProtocols(t *testing.T) {
	path := filepath.Join(t.TempDir(), "Xauthority")
	data := append(entry("XDM-AUTHORIZATION-1", []byte("other")), entry("MIT-MAGIC-COOKIE-1", []byte("0123456789abcdef"))...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Cookie(path)
	if err != nil || string(got) != "0123456789abcdef" {
		t.Fatalf("Cookie = %q, %v", got, err)
	}
	if err := os.WriteFile(path, data[:5], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Cookie(path); err == nil {
		t.Fatal("a truncated file was accepted")
	}
}

func TestWriteThenCookie(t *testing.T) {
	path := filepath.Join(t.TempDir(), "Xauthority")
	for _, cookie := range []string{"first cookie....", "second cookie..."} {
		if err := Write(path, "7", []byte(cookie)); err != nil {
			t.Fatal(err)
		}
		got, err := Cookie(path)
		if err != nil || string(got) != cookie {
			t.Fatalf("Cookie after Write(%q) = %q, %v", cookie, got, err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
	}
}
