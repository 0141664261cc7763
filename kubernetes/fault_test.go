package kubernetes

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// TestPodDeletedMidRun force-deletes the guest's Pod (kubectl delete
// --grace-period=0 --force) in the middle of a run: the run ends within
// seconds with an error naming the Pod, Down of the vanished Pod succeeds,
// and nothing of the guest is left.
func TestPodDeletedMidRun(t *testing.T) {
	t.Parallel()
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
	ts := runner.New(openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("test")), c)
	defer ts.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var deleted time.Time
	_, err := ts.Run(ctx, runner.RunOptions{
		Model: "test", Input: "look around",
	}, runner.CallOptions{
		BeforeAction: func(ctx context.Context, a runner.ActionInfo) (any, error) {
			if a.Action.Type == "move" && deleted.IsZero() {
				zero := int64(0)
				if err := inst.p.cli.set.CoreV1().Pods(inst.p.namespace).Delete(ctx, inst.p.name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
					return nil, err
				}
				deleted = time.Now()
			}
			return true, nil
		},
	})
	if deleted.IsZero() {
		t.Fatalf("the run never reached the move: %v", err)
	}
	took := time.Since(deleted)
	t.Logf("the run ended %v after the deletion: %v", took.Round(time.Millisecond), err)
	if err == nil {
		t.Fatal("the run succeeded on a deleted Pod")
	}
	if !strings.Contains(err.Error(), inst.p.name) {
		t.Errorf("the run's error does not name the Pod %s: %v", inst.p.name, err)
	}
	if took > 15*time.Second {
		t.Errorf("the run took %v to end after the deletion", took)
	}
	if err := inst.Down(context.Background()); err != nil {
		t.Errorf("Down of the deleted Pod: %v", err)
	}
	if l := left(t, inst.p); len(l) > 0 {
		t.Errorf("left after Down: %v", l)
	}
}
