package onerun

import (
	"errors"
	"testing"
)

var errClosed, errBusy = errors.New("closed"), errors.New("busy")

func TestGateLifecycle(t *testing.T) {
	var g Gate
	if s := g.State(); s != Open {
		t.Fatalf("new gate: state %v, want Open", s)
	}
	if err := g.Acquire(errClosed, errBusy); err != nil {
		t.Fatalf("first acquire: %v", err)
	}
	if err := g.Acquire(errClosed, errBusy); err != errBusy {
		t.Fatalf("second acquire while held: %v, want busy", err)
	}
	g.Close()
	if s := g.State(); s != Draining {
		t.Fatalf("closed while held: state %v, want Draining", s)
	}
	if err := g.Acquire(errClosed, errBusy); err != errClosed {
		t.Fatalf("acquire after close: %v, want closed", err)
	}
	g.Release()
	if s := g.State(); s != Closed {
		t.Fatalf("closed and released: state %v, want Closed", s)
	}
}

func TestReleaseReopensForTheNextRun(t *testing.T) {
	var g Gate
	for i := range 3 {
		if err := g.Acquire(errClosed, errBusy); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		g.Release()
	}
}
