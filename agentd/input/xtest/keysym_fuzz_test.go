//go:build linux && cgo

package xtest

import (
	"testing"

	"github.com/agentd-dev/agentd/actions"
)

// FuzzKeysym: every key name actions.ParseKey accepts is a keysym X knows,
// so agentd can press it. Seeds are in testdata/fuzz/FuzzKeysym.
func FuzzKeysym(f *testing.F) {
	f.Fuzz(func(t *testing.T, name string) {
		k, err := actions.ParseKey(name)
		if err != nil {
			return
		}
		if _, err := keysymOf(k.Keysym); err != nil {
			t.Fatalf("ParseKey(%q) = %+v, which X cannot press: %v", name, k, err)
		}
	})
}
