// Package backend is the one abstraction over where a guest desktop runs:
// this machine's Xvfb (local), a hardened container (docker) or a Lima VM
// (vm). It follows Lima's driver pattern: a Backend starts and finds guests,
// an Instance is one guest, and abilities that not every backend has are
// interfaces of their own (FileReader, LogReader, XReacher), asked for with a
// type assertion. Each backend registers itself by name in its register.go;
// a program links the backends it imports. agentctl's guest, run, exercise
// and bench commands go through this package alone.
//
// A guest with a name (Spec.Name) outlives the program that started it and
// is found again with Open; the named guests are recorded in a private
// directory (named.go). A guest without a name belongs to the program: Down
// ends it.
package backend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/dialaddr"
)

// Backend starts and finds guests of one kind.
type Backend interface {
	// Name is the name the backend is registered under: local, docker, vm.
	Name() string
	// Check says whether the backend can start spec, before anything starts.
	Check(spec Spec) error
	// Up starts a guest and returns once agentd answers /healthz with 200
	// and the desktop is ready. On error, whatever it started is removed.
	Up(ctx context.Context, spec Spec) (Instance, error)
	// Open finds the named guest that Up started, possibly in another
	// process; an error wrapping fs.ErrNotExist when there is none.
	Open(ctx context.Context, name string) (Instance, error)
	// List names the named guests of this backend.
	List(ctx context.Context) ([]string, error)
}

// Instance is one guest.
type Instance interface {
	// Describe says where the guest's agentd is and what it shows.
	Describe() Description
	// Status asks whether the guest runs and agentd is healthy.
	Status(ctx context.Context) Status
	// Down stops the guest and removes everything it left: processes,
	// containers or VMs, state directories, the token. It is safe to call
	// more than once.
	Down(ctx context.Context) error
	// Close releases the handle; the guest runs on (for a guest without a
	// name, until Down or the end of the program).
	Close() error
}

// AgentdDialer is a guest whose agentd is reached through a connection the
// backend makes (a tunnel, an API server's port-forward), not a stored address.
type AgentdDialer interface {
	DialAgentd(ctx context.Context) (net.Conn, error)
}

// Dialer returns how to reach inst's agentd: its DialAgentd, else a dial of
// the address it describes ("host:port" or "unix:/path"). Every host
// program that reaches a guest's agentd from an Instance goes through it.
func Dialer(inst Instance) func(ctx context.Context) (net.Conn, error) {
	if d, ok := inst.(AgentdDialer); ok {
		return d.DialAgentd
	}
	return dialaddr.Func(inst.Describe().Addr)
}

// Dial connects a controller to inst's agentd, with the token it describes,
// through Dialer.
func Dial(ctx context.Context, inst Instance) (*guest.Client, error) {
	d := inst.Describe()
	token, err := os.ReadFile(d.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("agentd token: %w", err)
	}
	return guest.DialWith(ctx, d.Addr, strings.TrimSpace(string(token)), guest.DialOptions{Dial: Dialer(inst)})
}

// FileReader is a guest whose files can be read back, for results an
// application saved: agentd itself offers no file access.
type FileReader interface {
	// ReadFile reads a file relative to the desktop user's home (a local
	// guest with a desktop: the desktop's directory). A missing file gives
	// an error wrapping fs.ErrNotExist.
	ReadFile(ctx context.Context, rel string) ([]byte, error)
}

// LogReader is a guest whose desktop's output can be read.
type LogReader interface {
	// Logs returns the last n lines (n ≤ 0: all).
	Logs(ctx context.Context, n int) (string, error)
}

// StartTimer is a guest that can say where its start's time went.
type StartTimer interface {
	// StartMilestones returns the moments of the guest's start, in time
	// order (the names are the backend's).
	StartMilestones(ctx context.Context) ([]Milestone, error)
}

// Milestone is a moment of a guest's start.
type Milestone struct {
	Name string
	At   time.Time
}

// XReacher is a guest whose X display this machine's programs can open (a
// local guest without a supervisor): for tools that run beside agentd, as
// the bench's peers do.
type XReacher interface {
	X() X
}

// X is how to reach a guest's X display from this machine.
type X struct {
	Display    string // e.g. ":3"
	Xauthority string // the display's cookie file
	Home       string // a private home for programs run against it
	TmpDir     string // a private temporary directory
	Env        []string
}

// Status is whether a guest runs and how agentd is.
type Status struct {
	Running bool `json:"running"`
	// Health is "ok" when agentd answers /healthz with 200, else what is
	// wrong; "-" when the guest does not run.
	Health string `json:"health"`
}

// Description says where a guest's agentd is and what it shows; a named
// guest's record (guest.json) holds it.
type Description struct {
	Name       string    `json:"name"`
	Backend    string    `json:"backend"`
	PID        int       `json:"pid,omitempty"` // a local guest's supervisor
	Display    string    `json:"display"`
	Addr       string    `json:"addr"` // for people, and for Dialer when the guest is no AgentdDialer
	TokenFile  string    `json:"token_file"`
	Xauthority string    `json:"xauthority,omitempty"`
	Instance   string    `json:"instance,omitempty"` // a Docker guest's container, a VM guest's Lima instance
	Owner      string    `json:"owner,omitempty"`    // what keeps the guest running, for people
	Home       string    `json:"home,omitempty"`     // where FileReader reads from
	Apps       string    `json:"apps"`               // the desktop's name, or "none"
	Outputs              // where the desktop's results are, for people
	Started    time.Time `json:"started"`
}

// Outputs are where people find a desktop's results.
type Outputs struct {
	FormURL    string `json:"form_url,omitempty"`
	RecordFile string `json:"record_file,omitempty"`
	NoteFile   string `json:"note_file,omitempty"`
}

// Spec describes a guest to start.
type Spec struct {
	// Name names a guest that outlives the program (see Up in named.go);
	// empty: a guest of this program.
	Name string
	// Dir is a named guest's private directory on the host (set by Up).
	Dir string
	// Width and Height are the screen's size; 0: the desktop's or the
	// backend's default.
	Width, Height int
	// Desktop is what the guest shows besides agentd; nil: nothing.
	Desktop Desktop
	// Network gives the guest a network of its own (docker only).
	Network bool
	// AgentdPath is a local guest's agentd binary (default: next to the
	// program, else on $PATH).
	AgentdPath string
	// KeepLogs keeps a local guest's logs after Down.
	KeepLogs bool
	// Code starts agentd with --code: Python code execution.
	Code bool
	// Browser starts agentd with --browser: Chromium for the browser
	// toolset, its sandbox kept (local and docker).
	Browser bool
	// AgentdArgs are more arguments for a local guest's agentd (the
	// bench's --browser).
	AgentdArgs []string
	// Progress, if set, receives a line at a time while Up works: a first
	// start of a container or VM takes minutes.
	Progress func(string)
}

// Say passes a line to Progress, if set.
func (s Spec) Say(line string) {
	if s.Progress != nil {
		s.Progress(line)
	}
}

// AppsName is the desktop's name for Description.Apps.
func (s Spec) AppsName() string {
	if s.Desktop == nil {
		return "none"
	}
	return s.Desktop.Name()
}

var (
	mu       sync.Mutex
	backends = map[string]Backend{}
)

// Register makes a backend available by its name; a backend's register.go
// calls it from init. A second backend of the same name panics.
func Register(b Backend) { register(backends, b.Name(), b, "Register") }

// register adds v to the registry m under a name it must not have yet:
// registering twice is a programming error, so it panics, naming fn.
func register[T any](m map[string]T, name string, v T, fn string) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := m[name]; dup {
		panic("backend: " + fn + " called twice for " + name)
	}
	m[name] = v
}

// ErrUnknown is wrapped by Get's error for a name no backend has.
var ErrUnknown = errors.New("unknown backend")

// Get returns the backend registered under name.
func Get(name string) (Backend, error) {
	mu.Lock()
	defer mu.Unlock()
	if b, ok := backends[name]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("%w %q: use %s", ErrUnknown, name, joinOr(namesLocked()))
}

// Names lists the registered backends, sorted.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	return namesLocked()
}

func namesLocked() []string {
	var n []string
	for name := range backends {
		n = append(n, name)
	}
	sort.Strings(n)
	return n
}

// joinOr writes "a, b or c".
func joinOr(s []string) string {
	switch len(s) {
	case 0:
		return "none (no backend is linked)"
	case 1:
		return s[0]
	}
	out := s[0]
	for _, x := range s[1 : len(s)-1] {
		out += ", " + x
	}
	return out + " or " + s[len(s)-1]
}

// InHome joins a FileReader's relative path to the home, refusing one that
// is absolute or leaves it.
func InHome(home, rel string) (string, error) {
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("read %q: want a path inside the home", rel)
	}
	return path.Join(home, filepath.ToSlash(rel)), nil
}
