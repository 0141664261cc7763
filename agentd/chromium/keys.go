package chromium

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/agentd-dev/agentd/actions/browser"
)

// keyDef is a key as the DOM names it.
type keyDef struct {
	key, code string
	keyCode   int64
	text      string
}

// namedKeys are the non-character keys a model names, by DOM key name.
var namedKeys = map[string]keyDef{
	"Enter": {"Enter", "Enter", 13, "\r"}, "Tab": {"Tab", "Tab", 9, ""}, "Escape": {"Escape", "Escape", 27, ""},
	"Backspace": {"Backspace", "Backspace", 8, ""}, "Delete": {"Delete", "Delete", 46, ""},
	"ArrowUp": {"ArrowUp", "ArrowUp", 38, ""}, "ArrowDown": {"ArrowDown", "ArrowDown", 40, ""},
	"ArrowLeft": {"ArrowLeft", "ArrowLeft", 37, ""}, "ArrowRight": {"ArrowRight", "ArrowRight", 39, ""},
	"Home": {"Home", "Home", 36, ""}, "End": {"End", "End", 35, ""},
	"PageUp": {"PageUp", "PageUp", 33, ""}, "PageDown": {"PageDown", "PageDown", 34, ""},
	" ": {" ", "Space", 32, " "}, "Space": {" ", "Space", 32, " "},
	"Control": {"Control", "ControlLeft", 17, ""}, "Shift": {"Shift", "ShiftLeft", 16, ""},
	"Alt": {"Alt", "AltLeft", 18, ""}, "Meta": {"Meta", "MetaLeft", 91, ""},
}

// keyAliases are other spellings models use.
var keyAliases = map[string]string{
	"Return": "Enter", "Esc": "Escape", "Up": "ArrowUp", "Down": "ArrowDown", "Left": "ArrowLeft", "Right": "ArrowRight",
	"Ctrl": "Control", "Cmd": "Meta", "Super": "Meta", "Del": "Delete",
}

// modifierBits are the protocol's modifier flags.
var modifierBits = map[string]int64{"Alt": 1, "Control": 2, "Meta": 4, "Shift": 8}

// lookupKey resolves one key name: a named key (any case of its DOM name or
// an alias) or a single character.
func lookupKey(name string) (keyDef, bool) {
	if utf8.RuneCountInString(name) == 1 {
		r, _ := utf8.DecodeRuneInString(name)
		if d, ok := namedKeys[name]; ok {
			return d, true
		}
		d := keyDef{key: name, text: name}
		switch {
		case r >= 'a' && r <= 'z':
			d.code, d.keyCode = "Key"+strings.ToUpper(name), int64(r-'a'+'A')
		case r >= 'A' && r <= 'Z':
			d.code, d.keyCode = "Key"+name, int64(r)
		case r >= '0' && r <= '9':
			d.code, d.keyCode = "Digit"+name, int64(r)
		}
		return d, true
	}
	for n, d := range namedKeys {
		if strings.EqualFold(n, name) {
			return d, true
		}
	}
	for alias, n := range keyAliases {
		if strings.EqualFold(alias, name) {
			return namedKeys[n], true
		}
	}
	return keyDef{}, false
}

// Key presses each entry of args.Keys in turn; an entry is one key or a
// chord joined with "+" ("Control+a"): the keys go down in order and up in
// reverse.
func (b *Browser) Key(ctx context.Context, args browser.KeyArgs) (*string, error) {
	chords := make([][]keyDef, 0, len(args.Keys))
	for _, entry := range args.Keys {
		parts := strings.Split(entry, "+")
		if strings.HasSuffix(entry, "++") || entry == "+" {
			parts = append(parts[:len(parts)-2], "+")
		}
		var chord []keyDef
		for _, p := range parts {
			d, ok := lookupKey(p)
			if !ok {
				return nil, browser.NewBrowserError(fmt.Sprintf("unknown key %q in %q", p, entry))
			}
			chord = append(chord, d)
		}
		chords = append(chords, chord)
	}
	return b.act(ctx, args.TabID, func(ctx context.Context, s *chromedp.Target, _ *tab) error {
		for _, chord := range chords {
			if err := pressChord(ctx, s, chord); err != nil {
				return err
			}
		}
		return nil
	})
}

func pressChord(ctx context.Context, s *chromedp.Target, chord []keyDef) error {
	var mods int64
	for _, d := range chord {
		mods |= modifierBits[d.key]
	}
	textAllowed := mods&^modifierBits["Shift"] == 0
	down := 0
	defer func() {
		// Release what went down, even after a failure.
		for i := down - 1; i >= 0; i-- {
			d := chord[i]
			_, _ = cdp.Call(context.WithoutCancel(ctx), s, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp,
				Key: d.key, Code: d.code, WindowsVirtualKeyCode: d.keyCode, Modifiers: mods})
		}
	}()
	for _, d := range chord {
		p := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeRawKeyDown, Key: d.key, Code: d.code, WindowsVirtualKeyCode: d.keyCode, Modifiers: mods}
		if d.text != "" && textAllowed {
			p.Type, p.Text, p.UnmodifiedText = input.DispatchKeyEventTypeKeyDown, d.text, d.text
		}
		if _, err := cdp.Call(ctx, s, input.DispatchKeyEvent, p); err != nil {
			return fmt.Errorf("key event: %w", err)
		}
		down++
	}
	return nil
}
