package bench

import (
	"fmt"
	"io"
)

// GuestStart is what 'agentctl run --guest BACKEND' waits for before its
// first action: a cold start (the backend starts a guest) against a guest
// claimed from 'agentctl guest pool', medians of alternating rounds, and
// where a cold start's time goes. agentctl measures it (the bench's own
// guests are local); Missing says why it was not, when it was not.
type GuestStart struct {
	Backend string `json:"backend"`
	Missing string `json:"missing,omitempty"`
	Rounds  int    `json:"rounds,omitempty"`
	// Run start → a screenshot answered, medians in ms.
	ColdMS        float64 `json:"cold_first_action_ms,omitempty"`
	PooledMS      float64 `json:"pooled_first_action_ms,omitempty"`
	ColdPerPooled float64 `json:"cold_per_pooled,omitempty"`
	// ColdMilestones are the cold start's moments (the backend's
	// StartMilestones, then "first-action"), each the median of the
	// rounds in ms after run start, in that order.
	ColdMilestones []Milestone `json:"cold_milestones,omitempty"`
	LoadStart      [3]float64  `json:"load_average_start"`
	LoadEnd        [3]float64  `json:"load_average_end"`
}

// Milestone is a moment of a guest's start, in ms after run start.
type Milestone struct {
	Name string  `json:"name"`
	AtMS float64 `json:"at_ms"`
}

// NewGuestStart begins a guest start report, noting the load average.
func NewGuestStart(backend string) *GuestStart {
	return &GuestStart{Backend: backend, LoadStart: loadAverage()}
}

// Done notes the load average at the end.
func (g *GuestStart) Done() { g.LoadEnd = loadAverage() }

// WriteTable writes the figures for people: each milestone with the time
// since the one before it.
func (g *GuestStart) WriteTable(w io.Writer) error {
	if g.Missing != "" {
		_, err := fmt.Fprintf(w, "\n%s guest start: not measured (%s)\n", g.Backend, g.Missing)
		return err
	}
	fmt.Fprintf(w, "\n%s guest, run start → first action (a screenshot answered), median of %d (load %.2f → %.2f):\n", g.Backend, g.Rounds, g.LoadStart[0], g.LoadEnd[0])
	fmt.Fprintf(w, "  cold start   %8.0f ms\n  from a pool  %8.0f ms  (%.0f× faster)\n", g.ColdMS, g.PooledMS, g.ColdPerPooled)
	fmt.Fprintf(w, "  where a cold start's time goes (milestone, ms after run start, ms since the one before):\n")
	prev := 0.0
	for _, m := range g.ColdMilestones {
		fmt.Fprintf(w, "    %-16s %8.0f %8.0f\n", m.Name, m.AtMS, m.AtMS-prev)
		prev = m.AtMS
	}
	return nil
}
