package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRunRoundsInterleavesAndExcludesWarmUp(t *testing.T) {
	var order []string
	calls := map[string]int{}
	fake := func(id string, d time.Duration) contender {
		return contender{id: id, run: func(context.Context) (time.Duration, error) {
			calls[id]++
			order = append(order, id)
			return d, nil
		}, warmed: func() { order = nil }}
	}
	// No budget and no turn length: one sample per contender and round.
	res, err := runRounds(context.Background(), []contender{fake("a", time.Millisecond), fake("b", 2*time.Millisecond)}, schedule{minRounds: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.samples["a"]) == 0 || len(res.samples["b"]) == 0 {
		t.Fatalf("samples %v", res.samples)
	}
	if got := calls["a"] - len(res.samples["a"]); got != 1 {
		t.Errorf("a was called %d times beyond its samples, want 1 (the warm-up)", got)
	}
	if len(res.samples["a"]) != 3 {
		t.Errorf("a has %d samples, want minRounds 3", len(res.samples["a"]))
	}
	for _, d := range res.samples["b"] {
		if d != 2*time.Millisecond {
			t.Fatalf("b's samples %v are not what it returned", res.samples["b"])
		}
	}
	// Since b's warm-up: a's turn, then b's, each round.
	if got := strings.Join(order, ""); got != "ababab" {
		t.Errorf("order %q, want a and b alternating", got)
	}
}

func TestRunRoundsDropsAFailingPeer(t *testing.T) {
	n := 0
	peer := contender{id: "peer", peer: true, run: func(context.Context) (time.Duration, error) {
		n++
		if n > 2 {
			return 0, errors.New("tool crashed")
		}
		return time.Millisecond, nil
	}}
	ours := contender{id: "ours", run: func(context.Context) (time.Duration, error) { return time.Millisecond, nil }}
	res, err := runRounds(context.Background(), []contender{peer, ours}, schedule{minRounds: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res.failed["peer"] == nil || len(res.samples["peer"]) != 1 {
		t.Fatalf("peer: failed %v, samples %v; want its error and its one good sample", res.failed["peer"], res.samples["peer"])
	}
	if len(res.samples["ours"]) != 5 {
		t.Errorf("ours stopped with the peer: %d samples", len(res.samples["ours"]))
	}
	// A figure says why it is missing: the failure, or why the peer was
	// not run at all; one that ran is not missing.
	for _, tc := range []struct{ id, absent, want string }{
		{"peer", "", "failed: tool crashed"},
		{"ours", "xdotool missing", ""},
		{"xdotool", "xdotool missing", "xdotool missing"},
	} {
		if got := res.missing(tc.id, tc.absent); got != tc.want {
			t.Errorf("missing(%q, %q) = %q, want %q", tc.id, tc.absent, got, tc.want)
		}
	}
}

func TestRunRoundsStopsOnOurFailure(t *testing.T) {
	ours := contender{id: "screenshot", run: func(context.Context) (time.Duration, error) { return 0, errors.New("agentd gone") }}
	if _, err := runRounds(context.Background(), []contender{ours}, schedule{minRounds: 1}); err == nil || !strings.Contains(err.Error(), "screenshot: agentd gone") {
		t.Fatalf("err = %v, want the contender's name and error", err)
	}
}
