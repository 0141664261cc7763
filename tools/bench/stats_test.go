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

func TestPercentileNearestRank(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		name     string
		sorted   []time.Duration
		p        float64
		wantMS   int
		describe string
	}{
		{"one sample", msList(7), 50, 7, "the only sample"},
		{"one sample p99", msList(7), 99, 7, "the only sample"},
		{"odd count median", msList(1, 2, 3, 4, 5), 50, 3, "the middle"},
		{"even count median", msList(1, 2, 3, 4), 50, 2, "the lower middle (rank 2 of 4)"},
		{"p99 of 10 is the max", msList(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10, "rank ceil(9.9) = 10"},
		{"p99 of 100", hundred, 99, 99, "rank 99"},
		{"p50 of 100", hundred, 50, 50, "rank 50"},
		{"p100", hundred, 100, 100, "the max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.p); got != time.Duration(tc.wantMS)*time.Millisecond {
				t.Errorf("p%v = %v, want %d ms (%s)", tc.p, got, tc.wantMS, tc.describe)
			}
		})
	}
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
