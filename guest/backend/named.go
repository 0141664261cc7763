package backend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"
	"time"

	"github.com/agentd-dev/agentd/internal/statedir"
)

// A named guest has a private directory, Root/<name>, holding its record
// guest.json (a Description and its backend) and whatever its backend keeps
// there (a local guest's supervisor: its lock, log and desktop). The record
// is written when Up begins and again once the guest is up, so a guest
// that is still starting is known. While Up works, its program holds an
// flock on the file "starting" there: a record without an address is a
// guest still starting while the lock is held, and one whose start died
// once it is not.

const (
	recordName   = "guest.json"
	startingName = "starting"
)

// holdStarting marks dir's guest as starting until release; the kernel
// drops the lock if the program dies first.
func holdStarting(dir string) (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, startingName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("guest start lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("guest start lock: %w", err)
	}
	return func() {
		os.Remove(f.Name())
		f.Close()
	}, nil
}

// isStarting reports whether a program is starting dir's guest now.
func isStarting(dir string) bool {
	f, err := os.Open(filepath.Join(dir, startingName))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	return false
}

// Root returns the private directory holding one directory per named
// guest: $XDG_RUNTIME_DIR/agentd/guests, else <tmp>/agentd-<uid>/guests.
func Root() (string, error) {
	return statedir.Root("agentd", "guests")
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$`)

// CheckName checks a guest's name: 1 to 32 letters, digits, '.', '_' or
// '-', and not a backend's name ('agentctl run --guest docker' means a
// fresh container).
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("guest name %q: use 1 to 32 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	if slices.Contains(Names(), name) {
		return fmt.Errorf("guest name %q is reserved: it names a backend", name)
	}
	return nil
}

// Dir returns a named guest's private directory.
func Dir(name string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	root, err := Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, name), nil
}

// Record reads a named guest's record; an error wrapping fs.ErrNotExist
// when there is none.
func Record(name string) (Description, error) {
	var d Description
	dir, err := Dir(name)
	if err != nil {
		return d, err
	}
	err = statedir.ReadJSON(filepath.Join(dir, recordName), &d)
	return d, err
}

func writeRecord(dir string, d Description) error {
	if err := statedir.WriteJSON(filepath.Join(dir, recordName), d); err != nil {
		return fmt.Errorf("guest record: %w", err)
	}
	return nil
}

// Named lists the named guests, sorted.
func Named() ([]string, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// NamedOn lists the named guests of one backend, for its List.
func NamedOn(backend string) ([]string, error) {
	names, err := Named()
	return slices.DeleteFunc(names, func(n string) bool {
		d, err := Record(n)
		return err != nil || d.Backend != backend
	}), err
}

// ErrRunning is wrapped by Up's error when a guest of that name runs.
var ErrRunning = errors.New("already running")

// Up starts a guest named spec.Name on b that outlives this program: a
// stale guest of that name (one that no longer runs) is removed first, a
// running one is an error wrapping ErrRunning.
func Up(ctx context.Context, b Backend, spec Spec) (Instance, error) {
	dir, err := Dir(spec.Name)
	if err != nil {
		return nil, err
	}
	if err := b.Check(spec); err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err == nil {
		if running, err := Down(ctx, spec.Name, true); err != nil {
			return nil, err
		} else if running {
			return nil, fmt.Errorf("guest %q is %w ('agentctl guest status --name %s')", spec.Name, ErrRunning, spec.Name)
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("guest directory: %w", err)
	}
	spec.Dir = dir
	release, err := holdStarting(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer release()
	if err := writeRecord(dir, Description{Name: spec.Name, Backend: b.Name(), Apps: spec.AppsName(), Started: time.Now().UTC()}); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	inst, err := b.Up(ctx, spec)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := writeRecord(dir, inst.Describe()); err != nil {
		return nil, errors.Join(err, inst.Down(context.WithoutCancel(ctx)), os.RemoveAll(dir))
	}
	return inst, nil
}

// Open finds a named guest, whatever its backend; an error wrapping
// fs.ErrNotExist when there is none.
func Open(ctx context.Context, name string) (Instance, error) {
	d, err := Record(name)
	if err != nil {
		return nil, err
	}
	b, err := Get(d.Backend)
	if err != nil {
		return nil, fmt.Errorf("guest %q: %w", name, err)
	}
	inst, err := b.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	if r, ok := inst.(recorded); ok && d.Addr != "" {
		r.fromRecord(d)
	}
	return inst, nil
}

// recorded is an instance that takes from its guest's record what its
// backend cannot find again: what the guest was started with.
type recorded interface{ fromRecord(Description) }

// fromRecord takes the desktop's name, its outputs and the start time from
// the guest's record (ImageInstance's Open knows only the container or VM).
func (i *ImageInstance) fromRecord(d Description) {
	i.Desc.Apps, i.Desc.Outputs, i.Desc.Started = d.Apps, d.Outputs, d.Started
}

// NamedStatus is a named guest's record and status, for 'agentctl guest
// status'.
type NamedStatus struct {
	Description
	Status
	// Starting: a program is starting the guest now (Up has not returned);
	// Running and Health say what the backend sees of it so far.
	Starting bool `json:"starting,omitempty"`
	// Elsewhere: this machine has no record of the guest; its backend
	// found it (a cluster's guest that another machine started).
	Elsewhere bool `json:"elsewhere,omitempty"`
}

// StatusOf describes a named guest and asks whether it runs. A guest whose
// record is gone (only kept logs are left) or whose backend cannot be asked
// is reported as not running, with the reason as its health; one still
// starting as Starting, with health "starting" until its container or VM
// exists.
func StatusOf(ctx context.Context, name string) NamedStatus {
	s := NamedStatus{Description: Description{Name: name}, Status: Status{Health: "-"}}
	d, err := Record(name)
	if err != nil {
		return s
	}
	s.Description = d
	if d.Addr == "" {
		if dir, err := Dir(name); err == nil && isStarting(dir) {
			s.Starting, s.Health = true, "starting"
		}
	}
	inst, err := Open(ctx, name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.Health = err.Error()
		}
		return s
	}
	defer inst.Close()
	s.Status = inst.Status(ctx)
	return s
}

// ErrStarting is wrapped by Down's error for a guest that a program is
// starting now.
var ErrStarting = errors.New("still starting")

// Down takes a named guest down and removes its directory. A guest that
// no longer runs is cleared away (its container or VM removed, its
// directory with kept logs too) and wasRunning is false; with onlyStale, a
// running guest is left alone. A running local guest's kept logs stay.
func Down(ctx context.Context, name string, onlyStale bool) (wasRunning bool, err error) {
	dir, err := Dir(name)
	if err != nil {
		return false, err
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("no guest named %q ('agentctl guest status' lists them): %w", name, err)
	}
	// Its starter removes it if the start fails; taking it down under
	// the starter would race with it.
	if isStarting(dir) {
		if onlyStale {
			return true, nil
		}
		return true, fmt.Errorf("guest %q is %w: take it down once it is up", name, ErrStarting)
	}
	inst, err := Open(ctx, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// No record, or its container or VM is gone already.
	case err != nil:
		return false, fmt.Errorf("guest %q: %w", name, err)
	default:
		defer inst.Close()
		if inst.Status(ctx).Running {
			if onlyStale {
				return true, nil
			}
			if err := inst.Down(ctx); err != nil {
				return true, fmt.Errorf("guest %q: %w", name, err)
			}
			// The backend removed what is its; kept logs stay.
			if err := os.Remove(filepath.Join(dir, recordName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return true, fmt.Errorf("guest %q: remove its record: %w", name, err)
			}
			clearPool(dir)
			_ = os.Remove(dir) // fails while kept logs are there
			return true, nil
		}
		if err := inst.Down(ctx); err != nil {
			return false, fmt.Errorf("remove the stale %s guest %q: %w", inst.Describe().Backend, name, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return false, fmt.Errorf("remove stale guest state: %w", err)
	}
	return false, nil
}
