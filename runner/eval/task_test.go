package eval

import (
	"errors"
	"strings"
	"testing"
)

// validTask is a task every case below breaks in one field.
const validTask = `{
  "id": "t1", "instruction": "do it", "mode": "computer", "max_steps": 5,
  "setup": {"files": [{"path": "a.txt", "content": "x"}], "server": {"pages": {"/": "<p>hi</p>"}},
            "apps": ["firefox", "mousepad"], "url": "{{server}}/", "open": "a.txt", "focus": "mousepad"},
  "checkers": [{"kind": "file", "path": "a.txt", "equals": "y"}, {"kind": "record", "count": 1}],
  "scripted": [{"actions": [{"type": "screenshot"}]}, {"final": "done"}]
}`

func TestValidateNamesTheBadField(t *testing.T) {
	if _, err := Parse([]byte(validTask)); err != nil {
		t.Fatalf("the valid task: %v", err)
	}
	cases := []struct {
		name, from, to, field string
	}{
		{"id", `"id": "t1"`, `"id": "T 1"`, "id"},
		{"instruction", `"instruction": "do it"`, `"instruction": " "`, "instruction"},
		{"mode", `"mode": "computer"`, `"mode": "vision"`, "mode"},
		{"max_steps", `"max_steps": 5`, `"max_steps": 0`, "max_steps"},
		{"view", `"max_steps": 5,`, `"max_steps": 5, "view": {"width": 9000, "height": 10},`, "view"},
		{"file outside home", `"path": "a.txt", "content"`, `"path": "../a.txt", "content"`, "setup.files[0].path"},
		{"hidden file", `"path": "a.txt", "content"`, `"path": ".eval-desktop/x", "content"`, "setup.files[0].path"},
		{"server both", `"server": {"pages"`, `"server": {"builtin": "pickup-form", "pages"`, "setup.server"},
		{"server builtin", `"server": {"pages": {"/": "<p>hi</p>"}}`, `"server": {"builtin": "nginx"}`, "setup.server.builtin"},
		{"server path", `{"/": "<p>hi</p>"}`, `{"/__record": "<p>hi</p>"}`, "setup.server.pages"},
		{"app", `"apps": ["firefox", "mousepad"]`, `"apps": ["firefox", "gimp"]`, "setup.apps[1]"},
		{"url without firefox", `"apps": ["firefox", "mousepad"]`, `"apps": ["mousepad"]`, "setup.url"},
		{"open without mousepad", `"apps": ["firefox", "mousepad"], "url": "{{server}}/", "open": "a.txt", "focus": "mousepad"`, `"apps": ["firefox"], "url": "{{server}}/", "open": "a.txt"`, "setup.open"},
		{"focus", `"focus": "mousepad"`, `"focus": "xterm"`, "setup.focus"},
		{"no checkers", `"checkers": [{"kind": "file", "path": "a.txt", "equals": "y"}, {"kind": "record", "count": 1}]`, `"checkers": []`, "checkers"},
		{"checker kind", `{"kind": "file", "path": "a.txt", "equals": "y"}`, `{"kind": "pixels", "equals": "y"}`, "checkers[0].kind"},
		{"checker no kind", `{"kind": "file", "path": "a.txt", "equals": "y"}`, `{"path": "a.txt", "equals": "y"}`, "checkers[0].kind"},
		{"regex", `"equals": "y"}`, `"matches": "(("}`, "checkers[0].matches"},
		{"two comparisons", `"equals": "y"}`, `"equals": "y", "contains": "y"}`, "checkers[0]"},
		{"no comparison", `{"kind": "file", "path": "a.txt", "equals": "y"}`, `{"kind": "file", "path": "a.txt"}`, "checkers[0]"},
		{"json_path needs equals", `"equals": "y"}`, `"json_path": "a", "contains": "y"}`, "checkers[0].json_path"},
		{"absent on record", `{"kind": "record", "count": 1}`, `{"kind": "record", "absent": true}`, "checkers[1].absent"},
		{"count on file", `"equals": "y"}`, `"equals": "y", "count": 2}`, "checkers[0].count"},
		{"command without argv", `{"kind": "record", "count": 1}`, `{"kind": "command", "exit": 0}`, "checkers[1].argv"},
		{"url outside browser mode", `{"kind": "record", "count": 1}`, `{"kind": "url", "contains": "x"}`, "checkers[1].kind"},
		{"turn with two", `{"actions": [{"type": "screenshot"}]}`, `{"actions": [{"type": "screenshot"}], "final": "x"}`, "scripted[0]"},
		{"code in computer mode", `{"actions": [{"type": "screenshot"}]}`, `{"code": "print(1)"}`, "scripted[0].code"},
		{"action without type", `[{"type": "screenshot"}]`, `[{"x": 1}]`, "scripted[0].actions[0]"},
		{"last not final", `{"final": "done"}`, `{"actions": [{"type": "wait"}]}`, "scripted[1]"},
		{"think", `{"final": "done"}`, `{"final": "done", "think_ms": -1}`, "scripted[1].think_ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(validTask, c.from) {
				t.Fatalf("the valid task has no %s", c.from)
			}
			_, err := Parse([]byte(strings.Replace(validTask, c.from, c.to, 1)))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a FieldError naming %s", err, c.field)
			}
			if fe.Field != c.field {
				t.Errorf("field %q (%v), want %q", fe.Field, err, c.field)
			}
		})
	}
	if _, err := Parse([]byte(strings.Replace(validTask, `"mode"`, `"modus": "x", "mode"`, 1))); err == nil || !strings.Contains(err.Error(), "modus") {
		t.Errorf("an unknown field: %v", err)
	}
}

func TestPassAtK(t *testing.T) {
	for _, c := range []struct {
		n, c, k int
		want    float64
	}{{3, 0, 3, 0}, {3, 1, 3, 1}, {3, 1, 1, 1.0 / 3}, {4, 2, 2, 1 - 1.0/6}, {5, 5, 2, 1}} {
		if got := passAtK(c.n, c.c, c.k); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("pass@%d of %d/%d = %v, want %v", c.k, c.c, c.n, got, c.want)
		}
	}
}
