package randhex

import (
	"encoding/hex"
	"testing"
)

func TestStringIsFreshHex(t *testing.T) {
	a, b := String(16), String(16)
	if _, err := hex.DecodeString(a); err != nil || len(a) != 32 {
		t.Fatalf("String(16) = %q: %v", a, err)
	}
	if a == b {
		t.Fatalf("two calls gave the same value %q", a)
	}
}
