package backend

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestInHome(t *testing.T) {
	cases := []struct {
		rel, want, err string
	}{
		{"note.txt", "/home/agent/note.txt", ""},
		{"form/records.jsonl", "/home/agent/form/records.jsonl", ""},
		{"a/../b", "/home/agent/b", ""},
		{"../etc/passwd", "", "inside the home"},
		{"/etc/passwd", "", "inside the home"},
		{"", "", "inside the home"},
	}
	for _, c := range cases {
		got, err := InHome("/home/agent", c.rel)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("InHome(%q) = %q, %v; want %q", c.rel, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("InHome(%q) = %q, %v; want an error saying %q", c.rel, got, err, c.err)
		}
	}
}

func TestCheckNameAndDesktops(t *testing.T) {
	for name, want := range map[string]string{
		"default": "", "a.b_c-1": "", "": "guest name", "../x": "guest name", "-x": "guest name",
		strings.Repeat("x", 33): "guest name",
	} {
		err := CheckName(name)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("CheckName(%q) = %v, want %q", name, err, want)
		}
	}
	if d, err := LookupDesktop("none"); d != nil || err != nil {
		t.Errorf("none: %v, %v", d, err)
	}
	if d, err := LookupDesktop("desktop"); d != BrowserAndEditor || err != nil {
		t.Errorf("desktop: %v, %v", d, err)
	}
	if _, err := LookupDesktop("office"); err == nil || !strings.Contains(err.Error(), `--apps "office"`) {
		t.Errorf("office: %v", err)
	}
	if _, err := Get("qemu"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Get(qemu) = %v, want ErrUnknown", err)
	}
}

func TestCheckImage(t *testing.T) {
	if err := CheckImage(Spec{Desktop: BrowserAndEditor}, "a container"); err != nil {
		t.Errorf("the image's own desktop: %v", err)
	}
	if err := CheckImage(Spec{Code: true}, "a container"); err != nil {
		t.Errorf("code: %v", err)
	}
	if err := CheckImage(Spec{AgentdArgs: []string{"--browser"}}, "a VM"); err == nil {
		t.Error("agentd arguments were accepted for an image guest")
	}
	if err := CheckImage(Spec{Desktop: localOnly{}}, "a VM"); err == nil || !strings.Contains(err.Error(), "cannot run in a VM") {
		t.Errorf("a desktop of local processes: %v", err)
	}
}

type localOnly struct{}

func (localOnly) Name() string     { return "local-only" }
func (localOnly) Size() (int, int) { return 0, 0 }

// TestImageMilestones: the entrypoint's marks, among other output, join
// the host's in time order, with their fractions of a second; a mark whose
// time does not parse is an error naming it.
func TestImageMilestones(t *testing.T) {
	host := []Milestone{{"up", time.Unix(100, 0)}, {"healthy", time.Unix(103, 0)}}
	logs := "starting\nentrypoint: mark begin 101.5\n  entrypoint: mark xvfb 102.000250\r\nentrypoint: mark agentd-started 102\nXvfb ready\n"
	got, err := ImageMilestones(host, logs)
	if err != nil {
		t.Fatal(err)
	}
	want := []Milestone{
		{"up", time.Unix(100, 0)},
		{"begin", time.Unix(101, 500_000_000)},
		{"agentd-started", time.Unix(102, 0)},
		{"xvfb", time.Unix(102, 250_000)},
		{"healthy", time.Unix(103, 0)},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ImageMilestones = %v; want %v", got, want)
	}
	if len(host) != 2 {
		t.Errorf("the host's milestones were changed: %v", host)
	}
	for _, bad := range []string{"entrypoint: mark begin", "entrypoint: mark begin soon", "entrypoint: mark begin 1.x"} {
		if _, err := ImageMilestones(nil, bad+"\n"); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ImageMilestones(%q) = %v; want an error naming the line", bad, err)
		}
	}
}
