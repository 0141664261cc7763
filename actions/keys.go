package actions

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Key is a parsed key name: the X keysym name the guest presses.
type Key struct {
	// Keysym is the X keysym name, e.g. "Control_L", "Return", "a", "F5",
	// "eacute", or "U20AC" for a character without a legacy name.
	Keysym string
	// Modifier is true for keys that modify others (held during clicks).
	Modifier bool
}

// aliases maps the names the computer tool emits (upper-cased here, matched
// case-insensitively) to keysyms.
var aliases = map[string]Key{
	"CTRL": {"Control_L", true}, "CONTROL": {"Control_L", true}, "LCTRL": {"Control_L", true},
	"RCTRL": {"Control_R", true}, "CONTROL_L": {"Control_L", true}, "CONTROL_R": {"Control_R", true},
	"ALT": {"Alt_L", true}, "OPTION": {"Alt_L", true}, "LALT": {"Alt_L", true}, "RALT": {"Alt_R", true},
	"ALT_L": {"Alt_L", true}, "ALT_R": {"Alt_R", true}, "ALTGR": {"ISO_Level3_Shift", true},
	"SHIFT": {"Shift_L", true}, "LSHIFT": {"Shift_L", true}, "RSHIFT": {"Shift_R", true},
	"SHIFT_L": {"Shift_L", true}, "SHIFT_R": {"Shift_R", true},
	"META": {"Super_L", true}, "SUPER": {"Super_L", true}, "CMD": {"Super_L", true},
	"COMMAND": {"Super_L", true}, "WIN": {"Super_L", true}, "WINDOWS": {"Super_L", true},
	"SUPER_L": {"Super_L", true}, "SUPER_R": {"Super_R", true}, "META_L": {"Super_L", true},
	"ENTER": {"Return", false}, "RETURN": {"Return", false}, "KP_ENTER": {"KP_Enter", false},
	"ESC": {"Escape", false}, "ESCAPE": {"Escape", false},
	"TAB": {"Tab", false}, "SPACE": {"space", false}, "SPACEBAR": {"space", false},
	"BACKSPACE": {"BackSpace", false}, "BACK_SPACE": {"BackSpace", false},
	"DELETE": {"Delete", false}, "DEL": {"Delete", false},
	"INSERT": {"Insert", false}, "INS": {"Insert", false},
	"HOME": {"Home", false}, "END": {"End", false},
	"PAGEUP": {"Prior", false}, "PAGE_UP": {"Prior", false}, "PGUP": {"Prior", false}, "PRIOR": {"Prior", false},
	"PAGEDOWN": {"Next", false}, "PAGE_DOWN": {"Next", false}, "PGDN": {"Next", false}, "NEXT": {"Next", false},
	"UP": {"Up", false}, "ARROWUP": {"Up", false}, "ARROW_UP": {"Up", false},
	"DOWN": {"Down", false}, "ARROWDOWN": {"Down", false}, "ARROW_DOWN": {"Down", false},
	"LEFT": {"Left", false}, "ARROWLEFT": {"Left", false}, "ARROW_LEFT": {"Left", false},
	"RIGHT": {"Right", false}, "ARROWRIGHT": {"Right", false}, "ARROW_RIGHT": {"Right", false},
	"CAPSLOCK": {"Caps_Lock", false}, "CAPS_LOCK": {"Caps_Lock", false},
	"NUMLOCK": {"Num_Lock", false}, "NUM_LOCK": {"Num_Lock", false},
	"SCROLLLOCK": {"Scroll_Lock", false}, "SCROLL_LOCK": {"Scroll_Lock", false},
	"PRINTSCREEN": {"Print", false}, "PRINT": {"Print", false}, "PRTSC": {"Print", false},
	"PAUSE": {"Pause", false}, "BREAK": {"Break", false}, "MENU": {"Menu", false}, "APPS": {"Menu", false},
}

// keysymNames are X keysym names accepted as they are (matched
// case-insensitively), beyond the aliases and single characters.
var keysymNames = []string{
	"BackSpace", "Tab", "Linefeed", "Clear", "Return", "Pause", "Scroll_Lock", "Sys_Req", "Escape", "Delete",
	"Home", "Left", "Up", "Right", "Down", "Prior", "Page_Up", "Next", "Page_Down", "End", "Begin",
	"Select", "Print", "Execute", "Insert", "Undo", "Redo", "Menu", "Find", "Cancel", "Help", "Break",
	"Mode_switch", "Num_Lock", "Shift_L", "Shift_R", "Control_L", "Control_R", "Caps_Lock", "Shift_Lock",
	"Meta_L", "Meta_R", "Alt_L", "Alt_R", "Super_L", "Super_R", "Hyper_L", "Hyper_R", "ISO_Level3_Shift",
	"KP_Space", "KP_Tab", "KP_Enter", "KP_Home", "KP_Left", "KP_Up", "KP_Right", "KP_Down", "KP_Prior",
	"KP_Next", "KP_End", "KP_Begin", "KP_Insert", "KP_Delete", "KP_Equal", "KP_Multiply", "KP_Add",
	"KP_Separator", "KP_Subtract", "KP_Decimal", "KP_Divide", "KP_0", "KP_1", "KP_2", "KP_3", "KP_4",
	"KP_5", "KP_6", "KP_7", "KP_8", "KP_9",
	"space", "exclam", "quotedbl", "numbersign", "dollar", "percent", "ampersand", "apostrophe",
	"parenleft", "parenright", "asterisk", "plus", "comma", "minus", "period", "slash", "colon",
	"semicolon", "less", "equal", "greater", "question", "at", "bracketleft", "backslash",
	"bracketright", "asciicircum", "underscore", "grave", "braceleft", "bar", "braceright", "asciitilde",
	"XF86AudioMute", "XF86AudioLowerVolume", "XF86AudioRaiseVolume", "XF86AudioPlay", "XF86AudioStop",
	"XF86AudioPrev", "XF86AudioNext", "XF86Back", "XF86Forward", "XF86Refresh", "XF86Search",
	"XF86HomePage", "XF86Mail", "XF86Calculator",
}

var keysymByFold = func() map[string]string {
	m := make(map[string]string, len(keysymNames))
	for _, n := range keysymNames {
		m[strings.ToUpper(n)] = n
	}
	return m
}()

// asciiKeysyms names the printable ASCII characters that are not letters or
// digits, as X does.
var asciiKeysyms = map[rune]string{
	' ': "space", '!': "exclam", '"': "quotedbl", '#': "numbersign", '$': "dollar", '%': "percent",
	'&': "ampersand", '\'': "apostrophe", '(': "parenleft", ')': "parenright", '*': "asterisk",
	'+': "plus", ',': "comma", '-': "minus", '.': "period", '/': "slash", ':': "colon",
	';': "semicolon", '<': "less", '=': "equal", '>': "greater", '?': "question", '@': "at",
	'[': "bracketleft", '\\': "backslash", ']': "bracketright", '^': "asciicircum", '_': "underscore",
	'`': "grave", '{': "braceleft", '|': "bar", '}': "braceright", '~': "asciitilde",
}

// ParseKey parses one key name the way the computer tool spells it,
// case-insensitively. An unknown name is an error that names it.
func ParseKey(name string) (Key, error) {
	if name == "" {
		return Key{}, fmt.Errorf("empty key name")
	}
	if utf8.RuneCountInString(name) == 1 {
		r, _ := utf8.DecodeRuneInString(name)
		return RuneKey(r)
	}
	upper := strings.ToUpper(name)
	if k, ok := aliases[upper]; ok {
		return k, nil
	}
	if n, ok := keysymByFold[upper]; ok {
		return Key{Keysym: n, Modifier: isModifierKeysym(n)}, nil
	}
	if f, ok := functionKey(upper); ok {
		return Key{Keysym: f}, nil
	}
	return Key{}, fmt.Errorf("unknown key name %q", name)
}

// RuneKey returns the key that produces r. Letters are lower-cased: in a key
// combination "A" means the A key, not shift+a.
func RuneKey(r rune) (Key, error) {
	switch {
	case r == utf8.RuneError:
		return Key{}, fmt.Errorf("key name is not valid UTF-8")
	case r < 0x20 || (r >= 0x7f && r < 0xa0): // C0, DEL, C1: X has no key for them
		return Key{}, fmt.Errorf("unknown key name %q (a control character)", string(r))
	case r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
		return Key{Keysym: string(unicode.ToLower(r))}, nil
	case r < 0x80:
		return Key{Keysym: asciiKeysyms[r]}, nil
	case unicode.IsLetter(r):
		return Key{Keysym: fmt.Sprintf("U%04X", unicode.ToLower(r))}, nil
	default:
		return Key{Keysym: fmt.Sprintf("U%04X", r)}, nil
	}
}

func functionKey(upper string) (string, bool) {
	if len(upper) < 2 || upper[0] != 'F' {
		return "", false
	}
	n := 0
	for _, c := range upper[1:] {
		if c < '0' || c > '9' {
			return "", false
		}
		n = n*10 + int(c-'0')
		if n > 24 {
			return "", false
		}
	}
	if n < 1 || (len(upper) > 2 && upper[1] == '0') {
		return "", false
	}
	return fmt.Sprintf("F%d", n), true
}

func isModifierKeysym(n string) bool {
	switch n {
	case "Shift_L", "Shift_R", "Control_L", "Control_R", "Alt_L", "Alt_R", "Meta_L", "Meta_R",
		"Super_L", "Super_R", "Hyper_L", "Hyper_R", "ISO_Level3_Shift":
		return true
	}
	return false
}

// ParseKeys parses a list of key names; the first unknown name is the error.
// A key named twice is an error too: it cannot be pressed twice at once.
func ParseKeys(names []string) ([]Key, error) {
	keys := make([]Key, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		k, err := ParseKey(n)
		if err != nil {
			return nil, err
		}
		if seen[k.Keysym] {
			return nil, fmt.Errorf("key %q is named twice", n)
		}
		seen[k.Keysym] = true
		keys = append(keys, k)
	}
	return keys, nil
}

// ParseButton accepts the computer tool's button names; empty means left.
func ParseButton(b Button) (Button, error) {
	switch Button(strings.ToLower(string(b))) {
	case "", Left:
		return Left, nil
	case Right:
		return Right, nil
	case Middle, Wheel:
		return Middle, nil
	case Back:
		return Back, nil
	case Forward:
		return Forward, nil
	}
	return "", fmt.Errorf("unknown button %q (known: left, right, middle, back, forward)", string(b))
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }

// checkTypable rejects control characters other than tab and line breaks:
// they are not text, and typing them as keys (Backspace, Escape, ...) would
// do something else than insert what was asked for.
func checkTypable(text string) error {
	for i, r := range text {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || (r >= 0x7f && r < 0xa0) {
			return fmt.Errorf("text has control character U+%04X at byte %d (only tab and line breaks can be typed)", r, i)
		}
	}
	return nil
}
