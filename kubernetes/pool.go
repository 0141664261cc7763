package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/randhex"
)

// The cluster-wide pool (docs/design.md, "Kubernetes guests"): pooled
// guests are ordinary guest Pods with two more labels, LabelPool (which
// kind of guest: a hash of its backend.PoolKey) and LabelClaim
// ("unclaimed", then "claimed"), and a random LabelSlot. A claimer, on
// any machine, lists the unclaimed Ready Pods of its kind in one slot
// (all slots when that one has none) and changes one's LabelClaim with a
// patch carrying the resourceVersion it read: the API server applies it
// only if the Pod has not changed since (optimistic concurrency), so of
// two claimers of one Pod exactly one succeeds and the other gets 409
// Conflict and tries the next. No lock server, no lease: etcd's
// compare-and-swap under the API server is the lock. A claimed Pod is its
// claimer's, never given out again; the keeper (KeepPool) sees one
// unclaimed Pod fewer and starts a replacement.

const (
	// LabelPool holds the pool's kind: PoolHash of its key.
	LabelPool = "agentd.dev/pool"
	// LabelClaim is "unclaimed" or "claimed".
	LabelClaim = "agentd.dev/claim"
	// AnnotationClaimedBy says who claimed a Pod and when, for people.
	AnnotationClaimedBy = "agentd.dev/claimed-by"
	// LabelSlot is one of poolSlots, at random: a claimer lists one
	// slot's guests first, not the whole pool.
	LabelSlot = "agentd.dev/slot"

	// poolSlots divides a claim's LIST: at 1,000 guests a LIST of all of
	// them made a claim read megabytes and most claimers' lists stale
	// (docs/design.md, "Kubernetes guests").
	poolSlots = 16

	unclaimed = "unclaimed"
	claimed   = "claimed"
)

// ErrPoolEmpty is wrapped by ClaimWait's error when no pooled guest became
// ready in time.
var ErrPoolEmpty = errors.New("no pooled guest ready")

// PoolHash names a pool key in a label value.
func PoolHash(key backend.PoolKey) string {
	data, _ := json.Marshal(key)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// KeepPool keeps size unclaimed guests of spec's kind in the namespace
// (counting those other keepers started), starting one at a time, until
// ctx ends; then it takes down the unclaimed guests it started.
func (b *Backend) KeepPool(ctx context.Context, spec backend.Spec, size int, out io.Writer) error {
	c, err := b.connect()
	if err != nil {
		return err
	}
	key := backend.KeyOf(b.Name(), spec)
	hash := PoolHash(key)
	sel := labels.Set{LabelManaged: managedBy, LabelPool: hash, LabelClaim: unclaimed}.String()
	var mine []*instance
	defer func() {
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		for _, i := range mine {
			// Claimed first, so no claimer takes a Pod being removed.
			if ok, _ := b.claim(bg, c, i.p.name, "keeper stopping"); ok {
				if err := i.Down(bg); err != nil {
					fmt.Fprintf(out, "warning: %v\n", err)
				}
			}
		}
	}()
	for {
		list, err := c.set.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("kubernetes pool: %w", err)
		}
		if n := len(list.Items); n < size {
			start := time.Now()
			s := spec
			s.Name = ""
			inst, err := b.upPooled(ctx, s, hash)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("kubernetes pool: %w", err)
			}
			mine = append(mine, inst)
			fmt.Fprintf(out, "pod %s ready in %.1fs (%d of %d)\n", inst.p.name, time.Since(start).Seconds(), n+1, size)
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// upPooled starts an unclaimed pooled guest.
func (b *Backend) upPooled(ctx context.Context, spec backend.Spec, hash string) (*instance, error) {
	pb := &Backend{Options: b.Options, cli: b.cli, simulated: b.simulated, extraLabels: map[string]string{
		LabelPool: hash, LabelClaim: unclaimed, LabelSlot: strconv.Itoa(rand.IntN(poolSlots)),
	}}
	inst, err := pb.Up(ctx, spec)
	if err != nil {
		return nil, err
	}
	return inst.(*instance), nil
}

// Offer starts one unclaimed pooled guest of spec's kind and returns once
// the kubelet reports it Ready, so that a Claim finds it.
func (b *Backend) Offer(ctx context.Context, spec backend.Spec) error {
	if _, err := b.connect(); err != nil {
		return err
	}
	spec.Name = ""
	inst, err := b.upPooled(ctx, spec, PoolHash(backend.KeyOf(b.Name(), spec)))
	if err != nil {
		return fmt.Errorf("kubernetes pool: %w", err)
	}
	if err := inst.p.waitProbed(ctx); err != nil {
		return errors.Join(fmt.Errorf("kubernetes pool: %w", err), inst.Down(context.WithoutCancel(ctx)))
	}
	return nil
}

// waitProbed waits until the kubelet reports the Pod Ready (its readiness
// probe passed), which Up does not wait for.
func (p *pod) waitProbed(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		po, err := p.get(ctx)
		switch {
		case err != nil:
			return p.errorf("wait for Ready: %w", err)
		case podReady(po):
			return nil
		}
		if why := stopped(po); why != "" {
			return p.errorf("%s before the kubelet reported it Ready", why)
		}
		select {
		case <-ctx.Done():
			return p.errorf("not Ready after a minute: %w", ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Claim takes an unclaimed Ready guest of spec's kind for the caller, who
// then owns it (Down when done); nil when there is none.
func (b *Backend) Claim(ctx context.Context, key backend.PoolKey) (backend.Instance, error) {
	c, err := b.connect()
	if err != nil {
		return nil, err
	}
	kind := labels.Set{LabelManaged: managedBy, LabelPool: PoolHash(key), LabelClaim: unclaimed}
	// A random slot first, so that a claim lists about a poolSlots-th of
	// the pool and concurrent claimers mostly list different guests; then
	// the whole kind, so that a guest in another slot (or from a keeper
	// that put none) is still found.
	slot := labels.Merge(kind, labels.Set{LabelSlot: strconv.Itoa(rand.IntN(poolSlots))})
	for _, sel := range []labels.Set{slot, kind} {
		if inst, err := b.claimFrom(ctx, c, key, sel.String()); err != nil || inst != nil {
			return inst, err
		}
	}
	return nil, nil
}

// claimFrom claims one of the Ready guests that sel selects; nil when
// there is none.
func (b *Backend) claimFrom(ctx context.Context, c *clients, key backend.PoolKey, sel string) (backend.Instance, error) {
	list, err := c.set.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("kubernetes pool: %w", err)
	}
	// In random order: claimers that listed together mostly try
	// different Pods first.
	items := list.Items
	rand.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	for i := range items {
		po := &items[i]
		if !podReady(po) || po.DeletionTimestamp != nil {
			continue
		}
		ok, err := b.claimAt(ctx, c, po, "claimer "+randhex.String(4))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		p := &pod{cli: c, namespace: c.namespace, name: po.Name}
		sec, err := c.set.CoreV1().Secrets(c.namespace).Get(ctx, po.Name, metav1.GetOptions{})
		if err == nil {
			err = p.keepToken(strings.TrimSpace(string(sec.Data[tokenName])))
		}
		if err != nil {
			return nil, errors.Join(p.errorf("claimed, but its token: %w", err), p.Down(context.WithoutCancel(ctx)))
		}
		return newInstance(p, "", key.Apps, backend.Outputs{}), nil
	}
	return nil, nil
}

// ClaimWait is Claim, waiting up to wait for a guest to become ready (the
// keeper replacing claimed ones); an error wrapping ErrPoolEmpty after.
func (b *Backend) ClaimWait(ctx context.Context, key backend.PoolKey, wait time.Duration) (backend.Instance, error) {
	deadline := time.Now().Add(wait)
	for {
		inst, err := b.Claim(ctx, key)
		if err != nil || inst != nil {
			return inst, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("kubernetes pool %s: %w in %v", PoolHash(key), ErrPoolEmpty, wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// claim claims the named Pod, reading it first.
func (b *Backend) claim(ctx context.Context, c *clients, name, by string) (bool, error) {
	po, err := c.set.CoreV1().Pods(c.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return b.claimAt(ctx, c, po, by)
}

// claimAt changes po's LabelClaim to claimed if po is unchanged since it
// was read (its resourceVersion); false when it was claimed by someone
// else or is gone. A change that is no claim (the kubelet's status update,
// a probe result) makes it read the Pod again and retry.
func (b *Backend) claimAt(ctx context.Context, c *clients, po *corev1.Pod, by string) (bool, error) {
	for {
		if po.Labels[LabelClaim] != unclaimed || po.DeletionTimestamp != nil {
			return false, nil
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			// A merge patch with a resourceVersion is applied only to that
			// version: the compare-and-swap.
			"resourceVersion": po.ResourceVersion,
			"labels":          map[string]string{LabelClaim: claimed},
			"annotations":     map[string]string{AnnotationClaimedBy: by + " at " + time.Now().UTC().Format(time.RFC3339Nano)},
		}})
		if err != nil {
			return false, err
		}
		_, err = c.set.CoreV1().Pods(c.namespace).Patch(ctx, po.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case !apierrors.IsConflict(err):
			return false, fmt.Errorf("kubernetes pool: claim %s: %w", po.Name, err)
		}
		if po, err = c.set.CoreV1().Pods(c.namespace).Get(ctx, po.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return false, nil
		} else if err != nil {
			return false, fmt.Errorf("kubernetes pool: claim %s: %w", po.Name, err)
		}
	}
}
