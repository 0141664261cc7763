package eval

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"time"
)

// PrintSummary writes rep's summary (PrintResults) and this invocation's
// throughput: trials a minute, and a trial's time beyond its guest's
// start: the run itself, and the rest (agentd dial, checkers, the guest's
// down).
func PrintSummary(w io.Writer, dir string, rep *Report) {
	PrintResults(w, dir, rep.Results)
	if rep.Ran == 0 {
		return
	}
	var up, run, over, beyond []float64
	for _, r := range rep.Results[len(rep.Results)-rep.Ran:] {
		up, run = append(up, r.GuestUp), append(run, r.RunSeconds)
		over, beyond = append(over, r.Seconds-r.GuestUp-r.RunSeconds), append(beyond, r.Seconds-r.GuestUp)
	}
	ms := func(s float64) string {
		return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
	}
	fmt.Fprintf(w, "throughput: %d trials in %s at --parallel %d: %.1f trials/min; per trial (medians): guest up %s, beyond it %s (run %s, the rest %s)\n",
		rep.Ran, rep.Wall.Round(100*time.Millisecond), rep.Parallel, float64(rep.Ran)/rep.Wall.Minutes(), ms(median(up)), ms(median(beyond)), ms(median(run)), ms(median(over)))
}

// PrintResults writes the summary of results: per task its passes, pass
// rate and medians, then the overall rate and, with more than one trial
// per task, pass@k (the chance that at least one of k trials passes,
// estimated per task from its n trials and averaged).
func PrintResults(w io.Writer, dir string, results []Result) {
	byTask := map[string][]Result{}
	var order []string
	for _, r := range results {
		if _, ok := byTask[r.Task]; !ok {
			order = append(order, r.Task)
		}
		byTask[r.Task] = append(byTask[r.Task], r)
	}
	sort.Strings(order)
	fmt.Fprintf(w, "%-22s %7s %6s %7s %8s %8s\n", "task", "passed", "rate", "steps", "time", "tokens")
	passed, total, k := 0, 0, 0
	var steps, secs, tokens []float64
	for _, id := range order {
		rs := byTask[id]
		p := 0
		var st, se, to []float64
		for _, r := range rs {
			if r.Pass {
				p++
			}
			st, se, to = append(st, float64(r.Steps)), append(se, r.Seconds), append(to, float64(r.Tokens))
		}
		passed, total, k = passed+p, total+len(rs), max(k, len(rs))
		steps, secs, tokens = append(steps, st...), append(secs, se...), append(tokens, to...)
		fmt.Fprintf(w, "%-22s %3d/%-3d %5.0f%% %7.0f %8s %8.0f\n", id, p, len(rs), 100*float64(p)/float64(len(rs)),
			median(st), fmtSecs(median(se)), median(to))
	}
	if total == 0 {
		fmt.Fprintln(w, "no results")
		return
	}
	fmt.Fprintf(w, "%-22s %3d/%-3d %5.0f%% %7.0f %8s %8.0f   (medians over all trials)\n", "overall", passed, total,
		100*float64(passed)/float64(total), median(steps), fmtSecs(median(secs)), median(tokens))
	if k > 1 {
		var sum float64
		for _, id := range order {
			rs := byTask[id]
			c := 0
			for _, r := range rs {
				if r.Pass {
					c++
				}
			}
			sum += passAtK(len(rs), c, k)
		}
		fmt.Fprintf(w, "pass@%d %.0f%% of %d tasks\n", k, 100*sum/float64(len(order)), len(order))
	}
	fmt.Fprintf(w, "results: %s\n", filepath.Join(dir, resultsFile))
}

// passAtK is the unbiased estimate of pass@k from n trials with c passes:
// 1 - C(n-c, k) / C(n, k).
func passAtK(n, c, k int) float64 {
	if k > n {
		k = n
	}
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtSecs(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(100 * time.Millisecond).String()
}
