package backend

import (
	"errors"
	"strings"
	"testing"
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
