package bench

import (
	"math"
	"testing"
	"time"
)

func msList(ms ...int) []time.Duration {
	ds := make([]time.Duration, len(ms))
	for i, m := range ms {
		ds[i] = time.Duration(m) * time.Millisecond
	}
	return ds
}

func TestTimeFigureSortsAndSummarises(t *testing.T) {
	f := timeFigure("x", "thing", msList(30, 10, 20, 40, 1000))
	if f.N != 5 || f.P50 != 30 || f.P99 != 1000 || f.Unit != UnitMS {
		t.Fatalf("got %+v, want n 5, p50 30, p99 1000 ms", f)
	}
	if empty := timeFigure("x", "thing", nil); empty.N != 0 || empty.P50 != 0 || empty.P99 != 0 {
		t.Fatalf("no samples: %+v", empty)
	}
}

func TestRateFigureP99IsTheSlowTail(t *testing.T) {
	// 100 characters in 100 ms (1000/s) and in 1 s (100/s).
	f := rateFigure("t", "typing", UnitCharsPerSec, 100, msList(100, 100, 100, 1000))
	if math.Abs(f.P50-1000) > 1e-9 || math.Abs(f.P99-100) > 1e-9 {
		t.Fatalf("got p50 %v p99 %v chars/s, want 1000 and 100", f.P50, f.P99)
	}
}

func TestCompareRatios(t *testing.T) {
	ours := Figure{ID: "ours", Unit: UnitMS, N: 10, P50: 10}
	ours.compare(
		Figure{ID: "slow", Unit: UnitMS, N: 5, P50: 150},
		Figure{ID: "fast", Unit: UnitMS, N: 5, P50: 5},
		Figure{ID: "missing", Unit: UnitMS, Missing: "missing (apt-get install x)"},
	)
	want := []Ratio{{"slow", 15}, {"fast", 0.5}}
	if len(ours.Vs) != len(want) {
		t.Fatalf("ratios %+v, want %+v (a missing peer has none)", ours.Vs, want)
	}
	for i, r := range want {
		if ours.Vs[i].Peer != r.Peer || math.Abs(ours.Vs[i].Times-r.Times) > 1e-9 {
			t.Errorf("ratio %d = %+v, want %+v", i, ours.Vs[i], r)
		}
	}

	rate := Figure{ID: "type", Unit: UnitCharsPerSec, N: 3, P50: 1000}
	rate.compare(Figure{ID: "xdotool-type", Unit: UnitCharsPerSec, N: 3, P50: 80})
	if len(rate.Vs) != 1 || math.Abs(rate.Vs[0].Times-12.5) > 1e-9 {
		t.Fatalf("rate ratio %+v, want ours/peer = 12.5", rate.Vs)
	}
}
