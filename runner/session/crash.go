package session

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agentd-dev/agentd/runner"
)

// CrashEnv names a boundary of a run at which the process kills itself, for
// crash tests of a resume (Session.Run): "POINT:N" kills the process (SIGKILL, no
// cleanup) at the Nth time POINT is reached. POINT is a checkpoint phase
// (request, response, before_call, after_call: just after it is on disk),
// action (an action performed, before the next step or the call's final
// screenshot) or screenshot (the final screenshot taken, before the
// after_call checkpoint).
const CrashEnv = "AGENTD_CRASH_AT"

// crashAt is the parsed CrashEnv; the zero value never crashes.
type crashAt struct {
	point string
	n     int
	seen  int
}

func crashFromEnv() (*crashAt, error) {
	v := os.Getenv(CrashEnv)
	if v == "" {
		return &crashAt{}, nil
	}
	point, num, _ := strings.Cut(v, ":")
	n, err := strconv.Atoi(num)
	switch point {
	case runner.PhaseRequest, runner.PhaseResponse, runner.PhaseBeforeCall, runner.PhaseAfterCall, "action", "screenshot":
	default:
		err = fmt.Errorf("unknown point %q", point)
	}
	if err != nil || n < 1 {
		return nil, fmt.Errorf("%s=%q: want POINT:N with N ≥ 1 (%v)", CrashEnv, v, err)
	}
	return &crashAt{point: point, n: n}, nil
}

// reached counts point and kills the process at the chosen one.
func (c *crashAt) reached(point string) {
	if c.point != point {
		return
	}
	if c.seen++; c.seen == c.n {
		p, _ := os.FindProcess(os.Getpid())
		_ = p.Kill()
		select {} // the kill is on its way
	}
}

// event passes a run event's boundary to reached.
func (c *crashAt) event(e runner.Event) {
	switch e.Kind {
	case runner.EventAction:
		c.reached("action")
	case runner.EventScreenshot:
		c.reached("screenshot")
	}
}

// crashLedger is a ledger that reaches each checkpoint's phase once it is
// saved.
type crashLedger struct {
	runner.Ledger
	c *crashAt
}

func (l crashLedger) Save(data []byte) error {
	if err := l.Ledger.Save(data); err != nil {
		return err
	}
	if cp, err := runner.LoadCheckpoint(data); err == nil {
		l.c.reached(cp.Phase)
	}
	return nil
}
