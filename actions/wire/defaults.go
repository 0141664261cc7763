package wire

import "time"

// Defaults of agentd that the host names too (the bench reports against
// them), kept here so that a host program need not link the guest packages
// that apply them.
const (
	// DefaultWaitQuiet is how long the screen must stay unchanged for wait
	// to call it settled: longer than the frame interval of spinners and
	// progress animations (16–100 ms) so they keep a wait going, shorter
	// than a text caret's blink (about 500–600 ms) so a blinking caret does
	// not keep every wait running until its timeout.
	DefaultWaitQuiet = 250 * time.Millisecond
	// DefaultCodePython is the interpreter of agentd --code (Debian's, which
	// finds the distribution's python3-pil).
	DefaultCodePython = "/usr/bin/python3"
)
