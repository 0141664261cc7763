package backend

import (
	"bytes"
	"context"
	"flag"
	"os"
	"strings"
	"testing"
	"time"
)

// TestUpOptions: the flags' defaults make a valid spec on a backend, and a
// bad name, size or application set is refused with the flag to change.
func TestUpOptions(t *testing.T) {
	fs := flag.NewFlagSet("guest up", flag.ContinueOnError)
	var o UpOptions
	o.Register(fs, 1440, 900)
	if err := fs.Parse([]string{"--backend", "poolfake", "--code"}); err != nil {
		t.Fatal(err)
	}
	b, spec, err := o.Check()
	if err != nil || b.Name() != "poolfake" {
		t.Fatalf("the defaults: %v, %v", b, err)
	}
	if spec.Name != DefaultName || spec.Width != 1440 || spec.Height != 900 || spec.Desktop != nil || !spec.Code {
		t.Fatalf("spec %+v", spec)
	}
	o.Apps = "desktop"
	if _, spec, err := o.Check(); err != nil || spec.Desktop != BrowserAndEditor {
		t.Fatalf("--apps desktop: %+v, %v", spec, err)
	}
	for _, c := range []struct {
		change func(*UpOptions)
		want   string
	}{
		{func(o *UpOptions) { o.Backend = "qemu" }, "unknown backend"},
		{func(o *UpOptions) { o.Name = "../etc" }, "guest name"},
		{func(o *UpOptions) { o.Size = "1440" }, "--size"},
		{func(o *UpOptions) { o.Size = "10x10" }, "--size"},
		{func(o *UpOptions) { o.Size = "9000x900" }, "--size"},
		{func(o *UpOptions) { o.Apps = "office" }, "--apps"},
	} {
		bad := o
		c.change(&bad)
		if _, _, err := bad.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", bad, err, c.want)
		}
	}
}

// TestStatusesAndWriteStatus: this machine's guests, one by name, an
// unknown name refused; each written as a person reads it.
func TestStatusesAndWriteStatus(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	ctx := context.Background()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if out, err := Statuses(ctx, "", ""); err != nil || len(out) != 0 {
		t.Fatalf("no guests: %v, %v", out, err)
	}
	WriteStatus(&buf, root, nil)
	if !strings.Contains(buf.String(), "no guests") {
		t.Errorf("no guests written as %q", buf.String())
	}
	for _, name := range []string{"one", "two"} {
		dir, err := Dir(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		d := Description{Name: name, Backend: "poolfake", Addr: "unix:/" + name, TokenFile: "/t/" + name, Started: time.Now()}
		if err := writeRecord(dir, d); err != nil {
			t.Fatal(err)
		}
	}
	out, err := Statuses(ctx, "", "")
	if err != nil || len(out) != 2 {
		t.Fatalf("two guests: %+v, %v", out, err)
	}
	if out, err = Statuses(ctx, "", "two"); err != nil || len(out) != 1 || out[0].Name != "two" || !out[0].Running {
		t.Fatalf("by name: %+v, %v", out, err)
	}
	if _, err := Statuses(ctx, "", "three"); err == nil || !strings.Contains(err.Error(), `no guest named "three"`) {
		t.Fatalf("an unknown name: %v", err)
	}
	buf.Reset()
	WriteStatus(&buf, root, append(out, NamedStatus{Description: Description{Name: "gone"}}))
	got := buf.String()
	for _, want := range []string{"two: running (poolfake", "health: ok", "address:    unix:/two", "token file: /t/two", "gone: not running"} {
		if !strings.Contains(got, want) {
			t.Errorf("status written without %q:\n%s", want, got)
		}
	}
	buf.Reset()
	WriteUp(&buf, out[0].Description, 1500*time.Millisecond)
	if got := buf.String(); !strings.Contains(got, `guest "two" is up (poolfake`) || !strings.Contains(got, "in 1.5s") || !strings.Contains(got, "agentctl guest down --name two") {
		t.Errorf("up written as:\n%s", got)
	}
}
