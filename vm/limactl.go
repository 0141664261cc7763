package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/internal/limitbuf"
)

// ErrNoLimactl is wrapped by the error Up, Open and friends return when the
// limactl program cannot be found.
var ErrNoLimactl = errors.New("limactl not found")

// installHint says how to get Lima; the error for a missing limactl ends with it.
const installHint = "install Lima 1.0 or later (macOS: brew install lima; elsewhere: https://lima-vm.io/docs/installation/)"

// minLimaMajor is the oldest Lima whose template fields and flags the
// package uses (portForwards' proto, limactl copy --recursive).
const minLimaMajor = 1

// errorLines is how many lines of a command's output an error carries.
const errorLines = 20

// limactl runs the limactl program.
type limactl struct {
	path string
	say  func(string) // progress lines; never nil
}

func findLimactl(path string, say func(string)) (limactl, error) {
	if path == "" {
		path = "limactl"
	}
	p, err := exec.LookPath(path)
	if err != nil {
		return limactl{}, fmt.Errorf("%w (%w): %s", ErrNoLimactl, err, installHint)
	}
	if say == nil {
		say = func(string) {}
	}
	return limactl{path: p, say: say}, nil
}

var versionRE = regexp.MustCompile(`limactl version v?([0-9]+)\.([0-9]+)`)

// checkVersion refuses a Lima older than 1.0; a version it cannot read
// (a development build) is let through with a note.
func (l limactl) checkVersion(ctx context.Context) error {
	out, err := l.output(ctx, nil, "--version")
	if err != nil {
		return err
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		l.say(fmt.Sprintf("cannot read limactl's version from %q: assuming it is recent enough", bytes.TrimSpace(out)))
		return nil
	}
	if major, _ := strconv.Atoi(string(m[1])); major < minLimaMajor {
		return fmt.Errorf("limactl %s.%s is too old: %s", m[1], m[2], installHint)
	}
	return nil
}

// noInstanceMsg is what limactl list says of a name it has no instance of.
func noInstanceMsg(name string) string { return "No instance matching " + name + " found." }

// existsMsg is what limactl create says when the name is taken.
func existsMsg(name string) string { return "instance `" + name + "` already exists" }

// command is limactl with args, killed when ctx ends.
func (l limactl) command(ctx context.Context, args []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, l.path, args...)
	// limactl's children (ssh, the host agent it spawns) may hold the
	// output pipes after it is killed: stop waiting for them.
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// output runs limactl and returns its standard output, at most max bytes
// of it (0: MaxReadFile). A failure carries the last lines of its standard
// error.
func (l limactl) output(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := l.command(ctx, args)
	cmd.Stdin = stdin
	out := &limitbuf.Buffer{Max: MaxReadFile}
	errOut := &tailWriter{}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Run(); err != nil {
		return out.Bytes(), runError(ctx, args, err, errOut.String())
	}
	return out.Bytes(), nil
}

// stream runs limactl, passing each line it prints (standard output and
// error) on as progress. A failure carries the last lines.
func (l limactl) stream(ctx context.Context, args ...string) error {
	cmd := l.command(ctx, args)
	w := &tailWriter{say: l.say}
	// The same writer for both: exec then calls Write from one goroutine.
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	w.flush()
	if err != nil {
		return runError(ctx, args, err, w.String())
	}
	return nil
}

// runError describes a failed limactl run.
func runError(ctx context.Context, args []string, err error, tail string) error {
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	err = fmt.Errorf("limactl %s: %w", strings.Join(args, " "), err)
	if tail = strings.TrimRight(tail, "\n"); tail != "" {
		err = fmt.Errorf("%w\n%s", err, tail)
	}
	return err
}

// tailWriter keeps the last errorLines lines written to it and, with say,
// passes every complete line on.
type tailWriter struct {
	say     func(string)
	partial []byte
	lines   []string
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.line(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}

func (w *tailWriter) line(s string) {
	s = strings.TrimRight(s, "\r")
	if w.say != nil {
		w.say(s)
	}
	if len(w.lines) == errorLines {
		w.lines = w.lines[1:]
	}
	w.lines = append(w.lines, s)
}

// flush passes on a last line that has no newline.
func (w *tailWriter) flush() {
	if len(w.partial) > 0 {
		w.line(string(w.partial))
		w.partial = nil
	}
}

func (w *tailWriter) String() string {
	w.flush()
	return strings.Join(w.lines, "\n")
}
