package bench

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
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
