package main

import (
	"context"
	"strings"
	"testing"
)

// Bad pool flags are refused before any guest starts.
func TestGuestPoolRefusesBadFlags(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--size", "0"}, "--size 0: want 1..16"},
		{[]string{"--size", "17"}, "--size 17: want 1..16"},
		{[]string{"--apps", "office"}, `--apps "office"`},
		{[]string{"--backend", "qemu"}, "unknown backend"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--rounds", "0"}, "flag provided but not defined"},
	} {
		err := guestPool(context.Background(), c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("guest pool %q: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}
