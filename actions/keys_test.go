package actions

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		name string
		want Key
	}{
		// Aliases the computer tool emits, any case.
		{"ctrl", Key{"Control_L", true}},
		{"CTRL", Key{"Control_L", true}},
		{"Control", Key{"Control_L", true}},
		{"alt", Key{"Alt_L", true}},
		{"option", Key{"Alt_L", true}},
		{"AltGr", Key{"ISO_Level3_Shift", true}},
		{"shift", Key{"Shift_L", true}},
		{"rshift", Key{"Shift_R", true}},
		{"cmd", Key{"Super_L", true}},
		{"META", Key{"Super_L", true}},
		{"win", Key{"Super_L", true}},
		{"enter", Key{"Return", false}},
		{"Return", Key{"Return", false}},
		{"esc", Key{"Escape", false}},
		{"space", Key{"space", false}},
		{"backspace", Key{"BackSpace", false}},
		{"del", Key{"Delete", false}},
		{"pageup", Key{"Prior", false}},
		{"PGDN", Key{"Next", false}},
		{"arrowleft", Key{"Left", false}},
		{"ArrowUp", Key{"Up", false}},
		{"capslock", Key{"Caps_Lock", false}},
		// X keysym names as they are.
		{"Control_R", Key{"Control_R", true}},
		{"Hyper_L", Key{"Hyper_L", true}},
		{"KP_Enter", Key{"KP_Enter", false}},
		{"kp_5", Key{"KP_5", false}},
		{"xf86audiomute", Key{"XF86AudioMute", false}},
		{"XF86Back", Key{"XF86Back", false}},
		{"exclam", Key{"exclam", false}},
		// Function keys F1–F24.
		{"F1", Key{"F1", false}},
		{"f12", Key{"F12", false}},
		{"F24", Key{"F24", false}},
		// Single characters: letters lower-cased (the key, not shift+key).
		{"a", Key{"a", false}},
		{"A", Key{"a", false}},
		{"7", Key{"7", false}},
		{"/", Key{"slash", false}},
		{"+", Key{"plus", false}},
		{" ", Key{"space", false}},
		{"é", Key{"U00E9", false}},
		{"É", Key{"U00E9", false}},
		{"€", Key{"U20AC", false}},
		{"🙂", Key{"U1F642", false}},
	}
	for _, tt := range tests {
		got, err := ParseKey(tt.name)
		if err != nil || got != tt.want {
			t.Errorf("ParseKey(%q) = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}

func TestParseKeyRejects(t *testing.T) {
	for _, name := range []string{"", "F25", "F0", "F01", "F100", "hyperspace", "ctrl+a", "\n", "\x7f", "\xff", "Fx",
		"\u0091", "\u0085", // C1 controls: found by FuzzParseKey, XStringToKeysym has no keysym for them
	} {
		_, err := ParseKey(name)
		if err == nil {
			t.Errorf("ParseKey(%q) accepted", name)
			continue
		}
		if name != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) && !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("ParseKey(%q) error %q does not name the key", name, err)
		}
	}
}

func TestParseKeys(t *testing.T) {
	keys, err := ParseKeys([]string{"ctrl", "shift", "a"})
	if err != nil || len(keys) != 3 || keys[2].Keysym != "a" {
		t.Fatalf("ParseKeys = %v, %v", keys, err)
	}
	if _, err := ParseKeys([]string{"ctrl", "Control"}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a key named twice: err = %v", err)
	}
	if _, err := ParseKeys([]string{"ctrl", "nope"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown key: err = %v", err)
	}
}

func TestCheckTypable(t *testing.T) {
	for _, ok := range []string{"", "plain", "tab\tand\nlines\r\n", "Zoë 東京 🙂", "\u00a0nbsp"} {
		if err := checkTypable(ok); err != nil {
			t.Errorf("checkTypable(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"\x00", "bell\a", "esc\x1b[A", "del\x7f", "c1\u0085"} {
		if err := checkTypable(bad); err == nil {
			t.Errorf("checkTypable(%q) accepted", bad)
		}
	}
}
