package bench

import (
	"slices"
	"time"

	"github.com/agentd-dev/agentd/internal/percentile"
)

// Units of figures. A time is better lower; a rate is better higher.
const (
	UnitMS          = "ms"
	UnitCharsPerSec = "chars/s"
)

// Figure is one measured distribution. For a time, P99 is the 99th
// percentile; for a rate it is the rate at the 99th percentile of time, the
// slow tail, so it is below P50.
type Figure struct {
	ID   string  `json:"id"`
	Name string  `json:"name"`
	Unit string  `json:"unit"`
	N    int     `json:"n"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	// Peer marks another stack's way of doing what the figure it is
	// compared with does.
	Peer bool `json:"peer,omitempty"`
	// Missing says why a peer was not measured (then N is 0).
	Missing string `json:"missing,omitempty"`
	// Vs compares this figure with peers measured in the same run.
	Vs   []Ratio `json:"vs,omitempty"`
	Note string  `json:"note,omitempty"`
}

// Ratio is how many times better a figure's median is than a peer's:
// peer time / our time, or our rate / peer rate. Above 1 means faster.
type Ratio struct {
	Peer  string  `json:"peer"`
	Times float64 `json:"times"`
}

// timeFigure summarises samples of a time in milliseconds.
func timeFigure(id, name string, samples []time.Duration) Figure {
	f := Figure{ID: id, Name: name, Unit: UnitMS, N: len(samples)}
	if len(samples) == 0 {
		return f
	}
	s := slices.Sorted(slices.Values(samples))
	f.P50 = ms(percentile.NearestRank(s, 50))
	f.P99 = ms(percentile.NearestRank(s, 99))
	return f
}

// rateFigure summarises samples of the time taken for units each, as a
// rate per second.
func rateFigure(id, name, unit string, units float64, samples []time.Duration) Figure {
	f := Figure{ID: id, Name: name, Unit: unit, N: len(samples)}
	if len(samples) == 0 {
		return f
	}
	s := slices.Sorted(slices.Values(samples))
	f.P50 = units / percentile.NearestRank(s, 50).Seconds()
	f.P99 = units / percentile.NearestRank(s, 99).Seconds()
	return f
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// compare adds to f the ratio against each measured peer.
func (f *Figure) compare(peers ...Figure) {
	for _, p := range peers {
		if p.N == 0 || f.N == 0 || p.P50 <= 0 || f.P50 <= 0 {
			continue
		}
		r := Ratio{Peer: p.ID, Times: p.P50 / f.P50}
		if f.Unit != UnitMS {
			r.Times = f.P50 / p.P50
		}
		f.Vs = append(f.Vs, r)
	}
}
