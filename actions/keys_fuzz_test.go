package actions

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzParseKey: no key name makes ParseKey panic; a refusal names the key;
// every accepted name is marked as a modifier exactly when it is one, and
// ASCII names are matched without regard to case (input/xtest's FuzzKeysym
// checks that X knows every accepted name). Seeds are in
// testdata/fuzz/FuzzParseKey.
func FuzzParseKey(f *testing.F) {
	f.Fuzz(func(t *testing.T, name string) {
		k, err := ParseKey(name)
		if err != nil {
			if name != "" && utf8.ValidString(name) && !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
				t.Fatalf("ParseKey(%q) error %q does not name the key", name, err)
			}
			return
		}
		if k.Modifier != isModifierKeysym(k.Keysym) {
			t.Fatalf("ParseKey(%q) = %+v: modifier flag is wrong", name, k)
		}
		if r, size := utf8.DecodeRuneInString(name); size == len(name) && r >= 0x80 {
			want := fmt.Sprintf("U%04X", r)
			if unicode.IsLetter(r) {
				want = fmt.Sprintf("U%04X", unicode.ToLower(r))
			}
			if k.Keysym != want {
				t.Fatalf("ParseKey(%q) = %q, want %q", name, k.Keysym, want)
			}
		}
		if isASCII(name) {
			for _, other := range []string{strings.ToUpper(name), strings.ToLower(name)} {
				if k2, err := ParseKey(other); err != nil || k2 != k {
					t.Fatalf("ParseKey(%q) = %+v but ParseKey(%q) = %+v, %v", name, k, other, k2, err)
				}
			}
		}
		if _, err := ParseKeys([]string{name, name}); err == nil || !strings.Contains(err.Error(), "twice") {
			t.Fatalf("ParseKeys(%q twice): %v", name, err)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
