package kubernetes

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentd-dev/agentd/guest/backend"
)

// TestClaimRace: 20 claimers, in separate backends (as on separate
// machines), race for a pool of 5 Ready guests: each guest is claimed
// exactly once, the 15 others find none and, waiting for a replacement
// that no keeper starts, fail with ErrPoolEmpty.
func TestClaimRace(t *testing.T) {
	t.Parallel()
	b := testBackend(t)
	spec := backend.Spec{Width: 640, Height: 480}
	key := backend.KeyOf(b.Name(), spec)
	hash := PoolHash(key)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := b.connect(); err != nil {
		t.Fatal(err)
	}
	const pool, claimers = 5, 20
	var wg sync.WaitGroup
	pods := make([]*instance, pool)
	errs := make([]error, pool)
	for i := range pool {
		wg.Go(func() { pods[i], errs[i] = b.upPooled(ctx, spec, hash) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("pooled guest %d: %v", i, err)
		}
		t.Cleanup(func() { pods[i].Down(context.Background()) })
	}
	// Claimers take only what the kubelet reports Ready.
	for _, p := range pods {
		for {
			po, err := p.p.get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if podReady(po) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("pod %s never Ready", p.p.name)
			case <-time.After(250 * time.Millisecond):
			}
		}
	}

	got := make([]backend.Instance, claimers)
	claimErrs := make([]error, claimers)
	startLine := make(chan struct{})
	for i := range claimers {
		wg.Go(func() {
			c := &Backend{Options: b.Options}
			if _, err := c.connect(); err != nil {
				claimErrs[i] = err
				return
			}
			<-startLine
			got[i], claimErrs[i] = c.ClaimWait(ctx, key, 2*time.Second)
		})
	}
	close(startLine)
	wg.Wait()

	byPod := map[string]int{}
	for i, inst := range got {
		switch {
		case inst != nil:
			byPod[inst.(*instance).p.name]++
			t.Cleanup(func() { inst.Down(context.Background()) })
		case !errors.Is(claimErrs[i], ErrPoolEmpty):
			t.Errorf("claimer %d: %v, want a guest or ErrPoolEmpty", i, claimErrs[i])
		}
	}
	for _, p := range pods {
		if n := byPod[p.p.name]; n != 1 {
			t.Errorf("pod %s claimed %d times, want once", p.p.name, n)
		}
		po, err := p.p.get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if po.Labels[LabelClaim] != claimed || po.Annotations[AnnotationClaimedBy] == "" {
			t.Errorf("pod %s: labels %v, annotations %v", p.p.name, po.Labels, po.Annotations)
		}
	}
	if len(byPod) != pool {
		t.Errorf("claimed %d distinct pods (%v), want %d", len(byPod), byPod, pool)
	}
	list, err := b.cli.set.CoreV1().Pods(b.cli.namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelPool + "=" + hash + "," + LabelClaim + "=" + unclaimed})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("unclaimed pods left: %d, %v", len(list.Items), err)
	}
}
