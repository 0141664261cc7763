package poll

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records a fatal failure.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(r) // Fatalf ends the caller, as runtime.Goexit does in a test
}

func run(r *recorder, f func()) {
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	f()
}

func TestForReturnsTheAwaitedValue(t *testing.T) {
	n := 0
	got := For(t, time.Second, "the third call", func() (int, bool) { n++; return n, n == 3 })
	if got != 3 {
		t.Fatalf("For returned %d, want 3", got)
	}
}

func TestUntilFailsNamingWhatAndTheLastValue(t *testing.T) {
	r := &recorder{TB: t}
	start := time.Now()
	run(r, func() {
		For(r, 100*time.Millisecond, "it is ready", func() (string, bool) { return "still busy", false })
	})
	if !strings.Contains(r.failed, "it is ready") || !strings.Contains(r.failed, "still busy") {
		t.Errorf("failure %q: want what was awaited and the last value", r.failed)
	}
	if took := time.Since(start); took < 100*time.Millisecond || took > 5*time.Second {
		t.Errorf("gave up after %v, want about 100ms", took)
	}
	r = &recorder{TB: t}
	run(r, func() { Until(r, 50*time.Millisecond, "never", func() bool { return false }) })
	if !strings.Contains(r.failed, "never") {
		t.Errorf("Until's failure %q", r.failed)
	}
}
