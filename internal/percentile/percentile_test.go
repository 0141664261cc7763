package percentile

import "testing"

func TestNearestRank(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		name     string
		sorted   []int
		p        float64
		want     int
		describe string
	}{
		{"one sample", []int{7}, 50, 7, "the only sample"},
		{"one sample p99", []int{7}, 99, 7, "the only sample"},
		{"odd count median", []int{1, 2, 3, 4, 5}, 50, 3, "the middle"},
		{"even count median", []int{1, 2, 3, 4}, 50, 2, "the lower middle (rank 2 of 4)"},
		{"p99 of 10 is the max", []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 10, "rank ceil(9.9) = 10"},
		{"p99 of 100", hundred, 99, 99, "rank 99"},
		{"p50 of 100", hundred, 50, 50, "rank 50"},
		{"p100", hundred, 100, 100, "the max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NearestRank(tc.sorted, tc.p); got != tc.want {
				t.Errorf("p%v = %v, want %d (%s)", tc.p, got, tc.want, tc.describe)
			}
		})
	}
}
