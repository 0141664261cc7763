package prereq

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a test would have ended.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestProgramsSkipsOrFails(t *testing.T) {
	const kind Kind = "AGENTD_REQUIRE_PREREQ_TEST"
	for _, required := range []string{"", "1"} {
		t.Setenv(string(kind), required)
		r := &recorder{TB: t}
		Programs(r, kind, "go", "agentd-no-such-program")
		got, other := r.skipped, r.failed
		if required != "" {
			got, other = r.failed, r.skipped
		}
		if !strings.Contains(got, "missing prerequisite: agentd-no-such-program is not installed") || !strings.Contains(got, string(kind)) || other != "" {
			t.Errorf("required=%q: skipped %q, failed %q", required, r.skipped, r.failed)
		}
	}
	r := &recorder{TB: t}
	Programs(r, kind, "go")
	if r.skipped != "" || r.failed != "" {
		t.Errorf("an installed program: skipped %q, failed %q", r.skipped, r.failed)
	}
}
