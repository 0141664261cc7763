package backend

import (
	"context"
	"errors"
	"os"
	"testing"
)

// slowFake is a backend whose Up waits until told to go on, so a guest can
// be looked at while it starts.
type slowFake struct{ entered, proceed chan struct{} }

func (slowFake) Name() string                           { return "slowfake" }
func (slowFake) Check(Spec) error                       { return nil }
func (slowFake) List(context.Context) ([]string, error) { return NamedOn("slowfake") }
func (f slowFake) Up(_ context.Context, spec Spec) (Instance, error) {
	f.entered <- struct{}{}
	<-f.proceed
	return fakeInst{d: Description{Name: spec.Name, Backend: "slowfake", Addr: "unix:/nowhere"}}, nil
}

func (slowFake) Open(_ context.Context, name string) (Instance, error) {
	d, err := Record(name)
	if err != nil {
		return nil, err
	}
	return fakeInst{d: d}, nil
}

var slow = slowFake{entered: make(chan struct{}), proceed: make(chan struct{})}

func init() { Register(slow) }

// A guest whose start is under way is "starting", not "not running", and
// neither a second Up nor Down takes it away from its starter; once Up
// returns it is running.
func TestStatusOfAStartingGuest(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		inst, err := Up(ctx, slow, Spec{Name: "s1"})
		if err == nil {
			inst.Close()
		}
		done <- err
	}()
	<-slow.entered
	if s := StatusOf(ctx, "s1"); !s.Starting || s.Backend != "slowfake" {
		t.Errorf("status while Up works: %+v; want starting", s)
	}
	if _, err := Down(ctx, "s1", false); !errors.Is(err, ErrStarting) {
		t.Errorf("Down while Up works: %v; want ErrStarting", err)
	}
	if _, err := Up(ctx, slow, Spec{Name: "s1"}); !errors.Is(err, ErrRunning) {
		t.Errorf("a second Up while the first works: %v; want ErrRunning", err)
	}
	close(slow.proceed)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := StatusOf(ctx, "s1"); s.Starting || !s.Running || s.Health != "ok" {
		t.Errorf("status once up: %+v; want running, ok", s)
	}
}

// A start whose program died leaves a record without an address and no
// lock: not starting.
func TestStatusOfADeadStart(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	dir, err := Dir("s2")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	release, err := holdStarting(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeRecord(dir, Description{Name: "s2", Backend: "poolfake"}); err != nil {
		t.Fatal(err)
	}
	if s := StatusOf(context.Background(), "s2"); !s.Starting {
		t.Errorf("status while the lock is held: %+v", s)
	}
	release()
	if s := StatusOf(context.Background(), "s2"); s.Starting {
		t.Errorf("status once the starter is gone: %+v; want not starting", s)
	}
}
