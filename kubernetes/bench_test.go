package kubernetes

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/tools/bench"
)

// TestBenchGuestStart is 'agentctl bench --guest-start --backend
// kubernetes' for one round: a cold Pod start and a Pod claimed from the
// cluster-wide pool, each up to agentd's answer to a screenshot through
// the port-forward. It is not parallel: a cold start must not find another
// test's pooled Pod (the bench refuses a cold start that took one). Both
// figures and the entrypoint's milestones, read from the Pod's log, are
// there, and no guest Pod is left.
func TestBenchGuestStart(t *testing.T) {
	b := registered(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log := &agentdtest.SyncBuffer{}
	gs, err := bench.MeasureGuestStart(ctx, b, 1, log)
	if err != nil {
		t.Fatalf("bench --guest-start --backend kubernetes: %v\n%s", err, log)
	}
	t.Logf("cold %.0f ms, pooled %.0f ms, milestones %+v", gs.ColdMS, gs.PooledMS, gs.ColdMilestones)
	if gs.Backend != "kubernetes" || gs.ColdMS <= 0 || gs.PooledMS <= 0 {
		t.Errorf("figures %+v: want the kubernetes backend's cold and pooled times", gs)
	}
	var names []string
	for _, m := range gs.ColdMilestones {
		names = append(names, m.Name)
	}
	for _, want := range []string{"up", "agentd-started", "first-action"} {
		if !slices.Contains(names, want) {
			t.Errorf("cold start milestones %v: no %q", names, want)
		}
	}
	c, err := b.connect()
	if err != nil {
		t.Fatal(err)
	}
	pods, err := c.set.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelManaged})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			t.Errorf("guest Pod %s left after the bench", p.Name)
		}
	}
}
