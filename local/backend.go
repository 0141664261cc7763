package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentd-dev/agentd/actions/browserrpc"
	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/healthz"
)

// Backend is the local guest as a backend.Backend ("local"): a guest
// without a name is a child of this program; a named one runs under a
// supervisor process of its own (supervisor.go) and outlives the program.
type Backend struct{}

var (
	_ backend.Backend    = Backend{}
	_ backend.Instance   = (*instance)(nil)
	_ backend.FileReader = (*instance)(nil)
	_ backend.XReacher   = (*instance)(nil)
	_ backend.Instance   = (*supervised)(nil)
	_ backend.FileReader = (*supervised)(nil)
)

// Desktop is a desktop a local guest can show: its applications run as
// processes of the guest.
type Desktop interface {
	backend.Desktop
	// Local prepares the desktop in dir, which it creates and which must
	// not exist yet, and adds its applications and settings to cfg.
	Local(dir string, cfg *Config) (Prepared, error)
}

// Prepared is a desktop prepared for one local guest.
type Prepared interface {
	// Home is where the desktop's files are, for ReadFile.
	Home() string
	// Outputs are where its results are, for people.
	Outputs() backend.Outputs
	// Close releases what the desktop runs in this program and removes
	// its directory; after the guest's Down.
	Close() error
}

// Name is "local".
func (Backend) Name() string { return "local" }

// Check refuses what a local guest cannot do.
func (Backend) Check(spec backend.Spec) error {
	if err := platformSupported(); err != nil {
		return err
	}
	if spec.Network {
		return errors.New("a local guest shares this machine's network (--network is for --backend docker)")
	}
	if spec.Desktop != nil {
		if _, ok := spec.Desktop.(Desktop); !ok {
			return fmt.Errorf("a local guest uses this machine's applications: --apps %s is for docker and vm guests", spec.Desktop.Name())
		}
	}
	return nil
}

// Up starts a guest: with a name, under a supervisor (see Supervise);
// without, as children of this program.
func (b Backend) Up(ctx context.Context, spec backend.Spec) (backend.Instance, error) {
	if err := b.Check(spec); err != nil {
		return nil, err
	}
	if spec.Name != "" {
		return startSupervisor(ctx, spec)
	}
	root, err := StateRoot()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(root, "local-")
	if err != nil {
		return nil, fmt.Errorf("local guest: %w", err)
	}
	inst, err := upIn(ctx, spec, work)
	if err != nil {
		os.RemoveAll(work)
		return nil, err
	}
	inst.desc.Owner = "this program (pid " + strconv.Itoa(os.Getpid()) + ")"
	return inst, nil
}

// Open finds a named guest through its supervisor.
func (Backend) Open(_ context.Context, name string) (backend.Instance, error) {
	d, err := backend.Record(name)
	if err != nil {
		return nil, err
	}
	dir, err := backend.Dir(name)
	if err != nil {
		return nil, err
	}
	return &supervised{dir: dir, desc: d}, nil
}

// List names the named local guests.
func (Backend) List(context.Context) ([]string, error) { return backend.NamedOn("local") }

// instance is a local guest run by this program.
type instance struct {
	g    *Guest
	prep Prepared // nil without a desktop
	work string   // the directory holding the guest's and the desktop's; "" under a supervisor
	desc backend.Description
}

// upIn starts a guest whose state and desktop live in work.
func upIn(ctx context.Context, spec backend.Spec, work string) (*instance, error) {
	cfg := Config{StateDir: filepath.Join(work, "desktop"), Width: spec.Width, Height: spec.Height, AgentdPath: spec.AgentdPath, KeepLogs: spec.KeepLogs}
	cfg.AgentdArgs = append(cfg.AgentdArgs, spec.AgentdArgs...)
	if spec.Code {
		cfg.AgentdArgs = append(cfg.AgentdArgs, "--code")
	}
	if spec.Browser {
		cfg.AgentdArgs = append(cfg.AgentdArgs, browserrpc.LocalAgentdArgs()...)
	}
	var prep Prepared
	if d, ok := spec.Desktop.(Desktop); ok {
		var err error
		if prep, err = d.Local(filepath.Join(work, "apps"), &cfg); err != nil {
			return nil, err
		}
	}
	g, err := Up(ctx, cfg)
	if err != nil {
		if prep != nil {
			err = errors.Join(err, prep.Close())
		}
		return nil, err
	}
	inst := &instance{g: g, prep: prep, work: work, desc: backend.Description{
		Name: spec.Name, Backend: "local", Display: g.Display, Addr: g.Addr, TokenFile: g.TokenFile,
		Xauthority: g.Xauthority, Home: filepath.Join(g.StateDir, "home"), Apps: spec.AppsName(), Started: time.Now().UTC(),
	}}
	if prep != nil {
		inst.desc.Home, inst.desc.Outputs = prep.Home(), prep.Outputs()
	}
	return inst, nil
}

func (i *instance) Describe() backend.Description { return i.desc }

func (i *instance) Status(ctx context.Context) backend.Status {
	if i.g.isDown() {
		return backend.Status{Health: "-"}
	}
	select {
	case <-i.g.Failed():
		return backend.Status{Health: i.g.Err().Error()}
	default:
	}
	return backend.Status{Running: true, Health: healthz.Describe(i.g.Health(ctx))}
}

// Down stops the guest, then the desktop, and removes the work directory
// unless logs are kept in it.
func (i *instance) Down(ctx context.Context) error {
	err := i.g.Down(ctx)
	if i.prep != nil {
		err = errors.Join(err, i.prep.Close())
	}
	if i.work == "" {
		return err // a supervisor's: it removes the guest's directory
	}
	if rmErr := os.Remove(i.work); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) && !i.g.cfg.KeepLogs {
		err = errors.Join(err, rmErr)
	}
	return err
}

func (i *instance) Close() error { return nil }

func (i *instance) ReadFile(_ context.Context, rel string) ([]byte, error) {
	return readIn(i.desc.Home, rel)
}

func (i *instance) X() backend.X {
	return backend.X{
		Display: i.g.Display, Xauthority: i.g.Xauthority, Env: i.g.Env(),
		Home: filepath.Join(i.g.StateDir, "home"), TmpDir: filepath.Join(i.g.StateDir, "tmp"),
	}
}

// readIn reads rel inside dir; rel may not leave it.
func readIn(dir, rel string) ([]byte, error) {
	file, err := backend.InHome(dir, rel)
	if err != nil {
		return nil, fmt.Errorf("local guest: %w", err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("local guest: %w", err)
	}
	return data, nil
}
