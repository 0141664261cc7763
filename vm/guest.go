package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/internal/healthz"
)

// MaxReadFile bounds what ReadFile returns.
const MaxReadFile = 64 << 20

// Guest is a running VM guest. Its fields are read-only.
type Guest struct {
	Name string // the Lima instance's name
	// Addr is agentd's address for guest.Dial: "127.0.0.1:PORT", Lima's
	// forward of the guest's 127.0.0.1:7010.
	Addr string
	// TokenFile holds agentd's token (0600, inside StateDir).
	TokenFile string
	// StateDir is the guest's private directory on the host (0700); Down
	// removes it.
	StateDir string
	// Home is the desktop user's home in the guest: where applications
	// save files.
	Home string
	// Width and Height are the screen's size in pixels.
	Width, Height int

	lima limactl

	downOnce sync.Once
	downErr  error
}

// Status is what Lima and agentd report about a guest.
type Status struct {
	// State is Lima's: Running, Stopped, Broken, ...; empty when Lima has
	// no such instance.
	State   string
	Running bool
	// Health is "healthy" when agentd answers /healthz with 200 through
	// the forward, else "unhealthy"; empty unless Running.
	Health string
	// Dir is Lima's instance directory (its logs are there).
	Dir string
}

func newGuest(lima limactl, name, dir, size string) *Guest {
	g := &Guest{Name: name, StateDir: dir, TokenFile: filepath.Join(dir, tokenName), Home: guestHome, lima: lima}
	if m := sizeRE.FindStringSubmatch(size); m != nil {
		g.Width, _ = strconv.Atoi(m[1])
		g.Height, _ = strconv.Atoi(m[2])
	}
	return g
}

// Open finds a guest that Up started earlier, possibly in another process,
// by cfg.Name in cfg.StateRoot (default StateRoot()). cfg.Limactl, if set,
// replaces the limactl Up used.
func Open(cfg Config) (*Guest, error) {
	if cfg.Name == "" {
		return nil, errors.New("vm guest: open: no name")
	}
	if !nameRE.MatchString(cfg.Name) {
		return nil, fmt.Errorf("vm guest: open: name %q: want letters, digits and _.- only", cfg.Name)
	}
	root, err := stateRoot(cfg)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, cfg.Name)
	st, err := readState(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("vm guest %s: not found (no %s): %w", cfg.Name, filepath.Join(dir, stateJSON), err)
	}
	if err != nil {
		return nil, fmt.Errorf("vm guest %s: %w", cfg.Name, err)
	}
	program := cfg.Limactl
	if program == "" {
		program = st.Limactl
	}
	lima, err := findLimactl(program, nil)
	if err != nil {
		return nil, fmt.Errorf("vm guest %s: %w", cfg.Name, err)
	}
	g := newGuest(lima, st.Name, dir, st.Size)
	g.Addr = st.Addr
	return g, nil
}

// List opens every guest under cfg.StateRoot (default StateRoot()), by name.
func List(cfg Config) ([]*Guest, error) {
	root, err := stateRoot(cfg)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("vm: list guests: %w", err)
	}
	var gs []*Guest
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(root, e.Name(), stateJSON)); err != nil {
			continue // not a guest, or one still starting
		}
		c := cfg
		c.Name, c.StateRoot = e.Name(), root
		g, err := Open(c)
		if err != nil {
			return gs, err
		}
		gs = append(gs, g)
	}
	return gs, nil
}

// Token reads agentd's token from TokenFile.
func (g *Guest) Token() (string, error) {
	b, err := os.ReadFile(g.TokenFile)
	if err != nil {
		return "", fmt.Errorf("vm guest %s: %w", g.Name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// instance is the part of limactl list --json this package reads.
type instance struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Dir    string `json:"dir"`
}

// list asks Lima about one instance; a zero instance means Lima has none
// of that name. Any other failure is an error carrying Lima's message.
func (l limactl) list(ctx context.Context, name string) (instance, error) {
	out, err := l.output(ctx, nil, "list", "--json", name)
	if err != nil {
		// Lima exits 1 for a name it does not know, saying so (older
		// versions exit 0 and print nothing: handled below).
		var exit *exec.ExitError
		if errors.As(err, &exit) && ctx.Err() == nil && strings.Contains(err.Error(), noInstanceMsg(name)) {
			return instance{}, nil
		}
		return instance{}, err
	}
	// One JSON object per line.
	for _, line := range bytes.Split(out, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var in instance
		if err := json.Unmarshal(line, &in); err != nil {
			return instance{}, fmt.Errorf("limactl list --json %s: %w", name, err)
		}
		if in.Name == name {
			return in, nil
		}
	}
	return instance{}, nil
}

// Status asks Lima about the VM and, when it runs, agentd about its health.
func (g *Guest) Status(ctx context.Context) (Status, error) {
	in, err := g.lima.list(ctx, g.Name)
	if err != nil {
		return Status{}, fmt.Errorf("vm guest %s: status: %w", g.Name, err)
	}
	s := Status{State: in.Status, Running: in.Status == "Running", Dir: in.Dir}
	if s.Running {
		s.Health = "unhealthy"
		if err := g.health(ctx); err == nil {
			s.Health = "healthy"
		}
	}
	return s, nil
}

// health asks agentd's /healthz through the forward.
func (g *Guest) health(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return healthz.Probe(ctx, g.Addr)
}

// waitForward polls /healthz through Lima's forward until it answers 200:
// agentd is healthy inside already, and Lima opens the forward once it
// sees the guest's port listening.
func (g *Guest) waitForward(ctx context.Context) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	last := "no answer"
	for {
		err := g.health(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil { // else this probe was cut short: the one before says more
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("agentd does not answer through the forward at %s (%s): %w", g.Addr, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// Logs returns the desktop service's last n lines of output (the
// entrypoint's, and its children's: Xvfb, openbox, the applications,
// agentd), from the guest's journal; n ≤ 0: all of it.
func (g *Guest) Logs(ctx context.Context, n int) (string, error) {
	out, err := g.lima.output(ctx, nil, g.shell(logsCommand(n)...)...)
	if err != nil {
		return "", fmt.Errorf("vm guest %s: logs: %w", g.Name, err)
	}
	return string(out), nil
}

// ReadFile returns a file of the running guest (an absolute path inside
// the VM, e.g. a file the exercise saved in the desktop user's home), read
// as the desktop user through limactl: agentd itself offers no file access
// (docs/design.md, "Safety"). A missing file gives an error wrapping fs.ErrNotExist.
func (g *Guest) ReadFile(ctx context.Context, file string) ([]byte, error) {
	if !path.IsAbs(file) {
		return nil, fmt.Errorf("vm guest %s: read %q: want an absolute path", g.Name, file)
	}
	out, err := g.lima.output(ctx, nil, g.shell(readCommand(file)...)...)
	if err != nil {
		if strings.Contains(err.Error(), "No such file or directory") {
			return nil, fmt.Errorf("vm guest %s: read %s: %w", g.Name, file, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("vm guest %s: read %s: %w", g.Name, file, err)
	}
	return out, nil
}

// logsCommand prints the desktop service's last n lines (n ≤ 0: all).
func logsCommand(n int) []string {
	args := []string{"sudo", "journalctl", "--unit=" + unitName, "--no-pager", "--output=cat"}
	if n > 0 {
		args = append(args, "--lines="+strconv.Itoa(n))
	}
	return args
}

// readCommand prints a file, read as the desktop user.
func readCommand(file string) []string {
	return []string{"sudo", "-u", guestUser, "cat", "--", file}
}

// Down deletes the VM (it is discarded, so it is not shut down first) and
// removes the host-side state directory, token included. It is safe to call
// more than once; later calls return the first call's result.
func (g *Guest) Down(ctx context.Context) error {
	g.downOnce.Do(func() {
		g.downErr = g.down(ctx)
	})
	return g.downErr
}

// down keeps the state directory when the VM may still exist, so that a
// later Open and Down can finish the job.
func (g *Guest) down(ctx context.Context) error {
	in, err := g.lima.list(ctx, g.Name)
	if err != nil {
		return fmt.Errorf("vm guest %s: down: %w", g.Name, err)
	}
	if in.Name != "" {
		if _, err := g.lima.output(ctx, nil, "delete", "--force", g.Name); err != nil {
			return fmt.Errorf("vm guest %s: down: %w", g.Name, err)
		}
	}
	if err := os.RemoveAll(g.StateDir); err != nil {
		return fmt.Errorf("vm guest %s: down: remove the state directory: %w", g.Name, err)
	}
	return nil
}
