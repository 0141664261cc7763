// Package codeexec is agentd's code-execution service (docs/design.md, "Code-execution mode"): per
// controller session, one persistent Python 3 worker whose namespace lives
// across calls, and an embedded pyautogui module whose functions call back
// into agentd's own executor over the worker's pipes.
//
// What the worker gets: Debian's python3 in isolated mode (-I), agentd's own
// user, an environment built from nothing (no token, no API key, no
// DISPLAY), a private working directory, standard input from /dev/null, and
// two pipes to agentd (file descriptors 3 and 4). Its input reaches the
// desktop only through agentd: points are in the session's view and mapped
// to the screen by the same transform as the computer tool's.
//
// Concurrency: a Session is used by one goroutine at a time (the agentd
// session's request worker). Each worker process has one reader goroutine,
// owned by the Session, which ends when the worker is stopped.
package codeexec

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/executor"
	"github.com/agentd-dev/agentd/scaling"
)

//go:embed py/*.py
var pyFiles embed.FS

// Defaults and bounds of Options and of one call.
const (
	DefaultPython   = "/usr/bin/python3"
	DefaultDeadline = 60 * time.Second
	MaxDeadline     = 30 * time.Minute
	// DefaultMaxOutputBytes caps the text of one call: enough for any
	// listing a model should read, small next to its context.
	DefaultMaxOutputBytes = 64 << 10
	// DefaultMaxImages and DefaultMaxImageBytes cap display() per call:
	// a handful of screenshots, as PNGs.
	DefaultMaxImages     = 8
	DefaultMaxImageBytes = 24 << 20
)

// Executor performs actions in screen coordinates (agentd's executor).
type Executor interface {
	Do(ctx context.Context, a actions.Action) (executor.Result, error)
}

// Holder presses and releases single keys and buttons that stay down across
// actions (pyautogui's keyDown and mouseDown): the display's Input.
type Holder interface {
	KeyDown(k actions.Key) error
	KeyUp(k actions.Key) error
	ButtonDown(b actions.Button) error
	ButtonUp(b actions.Button) error
}

// Desktop is the controller session the code runs for.
type Desktop interface {
	// Transform is the session's current view: what the model sees.
	Transform() scaling.Transform
	// Capture calls use with the whole screen, valid only during the call.
	Capture(ctx context.Context, use func(*image.RGBA) error) error
}

// Options configure a Service. Exec, Input and Pointer are required.
type Options struct {
	// Python is the interpreter (default DefaultPython: Debian's, which
	// finds python3-pil).
	Python string
	// Dir is where each session's private directory is made (default:
	// the system's temporary directory).
	Dir string
	// Exec performs actions, Input holds keys and buttons, Pointer reads
	// the pointer's screen position.
	Exec    Executor
	Input   Holder
	Pointer func(ctx context.Context) (x, y int, err error)
	// Hide are files the code must not read (agentd's token file): the
	// worker closes them to itself with Landlock where the kernel offers
	// it, and logs through Logf where not.
	Hide []string
	// ScrollPixelsPerStep is the executor's: pyautogui scrolls in wheel
	// steps, the executor in pixels.
	ScrollPixelsPerStep int
	// Caps of one call; zero means the default.
	MaxOutputBytes int
	MaxImages      int
	MaxImageBytes  int
	// Logf logs operational messages, never code or its output.
	Logf func(format string, args ...any)
}

// Service starts workers for sessions.
type Service struct {
	opts Options
}

// New checks that the interpreter and PIL are there, so agentd --code fails
// at start rather than at the first call.
func New(opts Options) (*Service, error) {
	if opts.Exec == nil || opts.Input == nil || opts.Pointer == nil {
		return nil, errors.New("codeexec: Exec, Input and Pointer are required")
	}
	if opts.Python == "" {
		opts.Python = DefaultPython
	}
	if opts.Dir == "" {
		opts.Dir = os.TempDir()
	}
	if opts.ScrollPixelsPerStep <= 0 {
		opts.ScrollPixelsPerStep = executor.DefaultScrollPixelsPerStep
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.MaxImages <= 0 {
		opts.MaxImages = DefaultMaxImages
	}
	if opts.MaxImageBytes <= 0 {
		opts.MaxImageBytes = DefaultMaxImageBytes
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, opts.Python, "-I", "-c", "import PIL.Image")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 300 {
			msg = msg[len(msg)-300:]
		}
		return nil, fmt.Errorf("code execution needs %s with PIL (Debian: apt-get install python3 python3-pil): %w %s", opts.Python, err, msg)
	}
	return &Service{opts: opts}, nil
}

// Deadline turns a request's deadline in milliseconds into a duration:
// zero means DefaultDeadline, beyond MaxDeadline is an error.
func Deadline(ms int64) (time.Duration, error) {
	switch {
	case ms == 0:
		return DefaultDeadline, nil
	case ms < 0:
		return 0, fmt.Errorf("deadline_ms %d is negative", ms)
	case ms > MaxDeadline.Milliseconds():
		return 0, fmt.Errorf("deadline_ms %d is beyond the %s limit", ms, MaxDeadline)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Open returns the code session of one controller session. Nothing starts
// until the first Exec; Close ends it.
func (s *Service) Open(d Desktop) *Session {
	return &Session{svc: s, desk: d, raw: tailBuffer{max: 16 << 10}}
}

// writeLib makes the session's private directory: lib (the worker and its
// modules) and work (the code's working directory), both the user's alone.
func (s *Service) writeLib() (string, error) {
	dir, err := os.MkdirTemp(s.opts.Dir, "agentd-code-")
	if err != nil {
		return "", fmt.Errorf("code session directory: %w", err)
	}
	lib := filepath.Join(dir, "lib")
	for _, d := range []string{lib, filepath.Join(dir, "work")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("code session directory: %w", err)
		}
	}
	entries, err := pyFiles.ReadDir("py")
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("embedded python: %w", err)
	}
	for _, e := range entries {
		b, err := pyFiles.ReadFile("py/" + e.Name())
		if err == nil {
			err = os.WriteFile(filepath.Join(lib, e.Name()), b, 0o400)
		}
		if err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("write %s: %w", e.Name(), err)
		}
	}
	return dir, nil
}
