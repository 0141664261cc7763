//go:build linux && cgo

package daemon

import (
	"flag"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOptionsDefaultsAndChecks: the flags' defaults serve, and what agentd
// cannot serve with is refused before the token or the display is touched.
func TestOptionsDefaultsAndChecks(t *testing.T) {
	t.Setenv("DISPLAY", ":7")
	fs := flag.NewFlagSet("agentd", flag.ContinueOnError)
	var o Options
	o.register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.Display != ":7" || o.Listen != "127.0.0.1:7010" || o.IdleTimeout != time.Minute || o.Capture != "auto" {
		t.Fatalf("defaults: %+v", o)
	}
	if err := o.check(); err != nil {
		t.Fatalf("the defaults are refused: %v", err)
	}
	for _, c := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.Display = "" }, "no display"},
		{func(o *Options) { o.IdleTimeout = 0 }, "--idle-timeout must be positive"},
		{func(o *Options) { o.Listen = "" }, "nothing to listen on"},
	} {
		bad := o
		c.change(&bad)
		if err := bad.check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", bad, err, c.want)
		}
	}
	socketOnly := o
	socketOnly.Listen, socketOnly.Socket = "", "/run/agentd.sock"
	if err := socketOnly.check(); err != nil {
		t.Errorf("a socket alone: %v", err)
	}
}

// TestAppWantsHideAndProgram: `agentd app` starts nothing without a path to
// hide and a program.
func TestAppWantsHideAndProgram(t *testing.T) {
	for _, args := range [][]string{{"--", "true"}, {"--hide", t.TempDir()}, nil} {
		if err := App(args); err == nil || !strings.Contains(err.Error(), "want --hide and a program") {
			t.Errorf("app %q: %v", args, err)
		}
	}
}

// TestBrowserUserMustBeUnprivileged: --browser-user names an account other
// than root, checked before Chromium starts.
func TestBrowserUserMustBeUnprivileged(t *testing.T) {
	logger := log.New(io.Discard, "", 0)
	if _, err := startBrowser(":0", 640, 480, "root", logger); err == nil || !strings.Contains(err.Error(), "not a usable non-root account") {
		t.Errorf("root: %v", err)
	}
	if _, err := startBrowser(":0", 640, 480, "no-such-user-agentd", logger); err == nil || !strings.Contains(err.Error(), "--browser-user") {
		t.Errorf("an unknown user: %v", err)
	}
}

// TestWriteFileAtomic: the address file appears whole, private, with no
// temporary file left beside it.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "addr")
	if err := writeFileAtomic(p, "127.0.0.1:7010\n"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "127.0.0.1:7010\n" {
		t.Fatalf("read %q, %v", got, err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("left beside it: %v", entries)
	}
}
