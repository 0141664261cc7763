package kubernetes

import (
	"context"
	"strings"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// TestPodTakenMidRun takes the guest's Pod away in the middle of a run, as
// a person or the cluster would: force-deleted (kubectl delete
// --grace-period=0 --force) or evicted through the Eviction API (what a
// node drain or the scheduler's preemption does; the Pod gets its grace
// period). The run ends within seconds with an error naming the Pod, Down
// of the vanished Pod succeeds, and nothing of the guest is left.
func TestPodTakenMidRun(t *testing.T) {
	t.Parallel()
	zero := int64(0)
	for _, c := range []struct {
		name string
		take func(ctx context.Context, p *pod) error
	}{
		{"force-deleted", func(ctx context.Context, p *pod) error {
			return p.cli.set.CoreV1().Pods(p.namespace).Delete(ctx, p.name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}},
		{"evicted", func(ctx context.Context, p *pod) error {
			return p.cli.set.PolicyV1().Evictions(p.namespace).Evict(ctx, &policyv1.Eviction{
				ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: p.namespace},
			})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runWhilePodTaken(t, c.take)
		})
	}
}

func runWhilePodTaken(t *testing.T, take func(context.Context, *pod) error) {
	b := testBackend(t)
	inst := up(t, b, backend.Spec{Width: 640, Height: 480})
	c := dial(t, inst)

	model, base := respserver.Start(
		respserver.Call(`{"type":"screenshot"}`),
		respserver.Call(`{"type":"move","x":10,"y":10}`, `{"type":"screenshot"}`),
		respserver.Call(`{"type":"screenshot"}`),
		respserver.Final("unreachable"),
	)
	defer model.Close()
	ts := runner.New(respserver.Client(base), c)
	defer ts.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var taken time.Time
	_, err := ts.Run(ctx, runner.RunOptions{
		Model: "test", Input: "look around",
	}, runner.CallOptions{
		BeforeAction: func(ctx context.Context, a runner.ActionInfo) (any, error) {
			if a.Action.Type == "move" && taken.IsZero() {
				if err := take(ctx, inst.p); err != nil {
					return nil, err
				}
				taken = time.Now()
			}
			return true, nil
		},
	})
	if taken.IsZero() {
		t.Fatalf("the run never reached the move: %v", err)
	}
	took := time.Since(taken)
	t.Logf("the run ended %v after the Pod was taken: %v", took.Round(time.Millisecond), err)
	if err == nil {
		t.Fatal("the run succeeded on a Pod taken away")
	}
	if !strings.Contains(err.Error(), inst.p.name) {
		t.Errorf("the run's error does not name the Pod %s: %v", inst.p.name, err)
	}
	if took > 15*time.Second {
		t.Errorf("the run took %v to end after the Pod was taken", took)
	}
	if err := inst.Down(context.Background()); err != nil {
		t.Errorf("Down of the taken Pod: %v", err)
	}
	if l := podLeft(inst.p); len(l) > 0 {
		t.Errorf("left after Down: %v", l)
	}
}
