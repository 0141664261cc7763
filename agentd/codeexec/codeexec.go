// Package codeexec is agentd's code-execution service (docs/design.md, "Code-execution mode"): per
// controller session, one persistent Python 3 worker whose namespace lives
// across calls, and an embedded pyautogui module whose functions call back
// into agentd's own executor over the worker's pipes, through the same gate
// as the controller's input (Desktop).
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
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/agentd/executor"
	"github.com/agentd-dev/agentd/internal/defaults"
	"github.com/agentd-dev/agentd/scaling"
)

//go:embed py/*.py
var pyFiles embed.FS

// Defaults and bounds of Options and of one call.
const (
	DefaultPython   = wire.DefaultCodePython
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

// ErrTakenOver is what a Desktop's input returns while a person holds the
// desktop: nothing was done. It ends the call (the worker is stopped), as
// does a context whose cause it is; the result then says so.
var ErrTakenOver = errors.New("a person took over the desktop")

// Held is one key or one button the code holds down across actions
// (pyautogui's keyDown and mouseDown): exactly one of Key and Button is set.
type Held struct {
	Key    actions.Key
	Button actions.Button
}

// Desktop is the controller session the code runs for, and the code's only
// way to the display's input: there is no executor or input device in
// Options, so every input of the code goes through the gate the Desktop
// puts in front of it (agentd's: one input at a time, and the lease).
type Desktop interface {
	// Transform is the session's current view: what the model sees.
	Transform() scaling.Transform
	// Capture calls use with the whole screen, valid only during the call.
	Capture(ctx context.Context, use func(*image.RGBA) error) error
	// Do performs a, in screen coordinates, as the code's input; Press
	// presses (down) or releases h as the code's input. Both return
	// ErrTakenOver, having done nothing, while a person holds the desktop.
	Do(ctx context.Context, a actions.Action) (executor.Result, error)
	Press(h Held, down bool) error
	// Release lifts h, which the code left held: agentd's own clean up at
	// the end of a call, done even while a person holds the desktop (it
	// only undoes the code's press).
	Release(h Held) error
}

// Options configure a Service. Pointer is required.
type Options struct {
	// Python is the interpreter (default DefaultPython: Debian's, which
	// finds python3-pil).
	Python string
	// Dir is where each session's private directory is made (default:
	// the temporary directory; /tmp for an agentd running as root, whose
	// workers run as nobody and must reach it).
	Dir string
	// Pointer reads the pointer's screen position.
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
	if opts.Pointer == nil {
		return nil, errors.New("codeexec: Pointer is required")
	}
	if opts.Python == "" {
		opts.Python = DefaultPython
	}
	if opts.Dir == "" {
		opts.Dir = os.TempDir()
		if os.Geteuid() == 0 {
			// The workers run as nobody, who must reach the directory:
			// root's TMPDIR may be private.
			opts.Dir = "/tmp"
		}
	}
	defaults.Positive(&opts.ScrollPixelsPerStep, executor.DefaultScrollPixelsPerStep)
	defaults.Positive(&opts.MaxOutputBytes, DefaultMaxOutputBytes)
	defaults.Positive(&opts.MaxImages, DefaultMaxImages)
	defaults.Positive(&opts.MaxImageBytes, DefaultMaxImageBytes)
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
	svc := &Service{opts: opts}
	if err := svc.probe(); err != nil {
		return nil, fmt.Errorf("code execution needs its worker's sandbox: %w", err)
	}
	return svc, nil
}

// probe starts one worker and lets it end at once, so a sandbox this
// system cannot give (no seccomp, say) refuses --code at start; a weaker
// one (no Landlock) is logged.
func (s *Service) probe() error {
	dir, err := s.writeLib()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	out := tailBuffer{max: 4 << 10}
	w, err := startWorker(&s.opts, dir, &out)
	if err != nil {
		return err
	}
	if err := w.ready(context.Background(), &out, s.opts.Logf); err != nil {
		return err
	}
	_ = w.stop()
	return nil
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
	// An agentd running as root runs its workers as nobody: theirs, then.
	own := func(path string) error {
		if os.Geteuid() != 0 {
			return nil
		}
		return os.Chown(path, NobodyID, NobodyID)
	}
	if err := own(dir); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("code session directory: %w", err)
	}
	for _, d := range []string{lib, filepath.Join(dir, "work")} {
		err := os.Mkdir(d, 0o700)
		if err == nil {
			err = own(d)
		}
		if err != nil {
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
		if err == nil {
			err = own(filepath.Join(lib, e.Name()))
		}
		if err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("write %s: %w", e.Name(), err)
		}
	}
	return dir, nil
}
