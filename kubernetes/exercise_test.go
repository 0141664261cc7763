package kubernetes

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentd-dev/agentd/tools/exercise"
)

var defaultOnce sync.Once

// registered is the registered backend (Default), which agentctl's
// commands and the exercise use, set up for the test cluster as agentctl's
// flags would (--kubeconfig, --image, --image-pull-policy Never).
func registered(t *testing.T) *Backend {
	t.Helper()
	b := testBackend(t)
	defaultOnce.Do(func() { Default.Options = b.Options })
	return Default
}

// TestExerciseTakesPooledPod is 'agentctl exercise --guest kubernetes'
// with 'agentctl guest pool --backend kubernetes --apps exercise' keeping a
// guest ready: the exercise claims the cluster's pooled Pod, the scripted
// model books the pickup in its Firefox and saves the note in its
// Mousepad, the results read back through the API server's exec match,
// and the claimed Pod is taken down afterwards (it serves one run).
func TestExerciseTakesPooledPod(t *testing.T) {
	t.Parallel()
	b := registered(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	if err := b.Offer(ctx, exercise.Spec(exercise.RunConfig{})); err != nil {
		t.Fatalf("a pooled exercise guest: %v", err)
	}
	var out bytes.Buffer
	rep, err := exercise.Run(ctx, exercise.RunConfig{Out: &out, RecordDir: t.TempDir(), Backend: "kubernetes"})
	t.Logf("exercise output:\n%s", out.String())
	if err != nil {
		t.Fatalf("exercise in a pooled Pod: %v", err)
	}
	if rep.Pooled == "" || !strings.Contains(out.String(), "took the pooled kubernetes guest "+rep.Pooled) {
		t.Errorf("the exercise did not take the pooled Pod (report %+v)", rep)
	}
	if rep.Steps == 0 || rep.Actions == 0 || rep.BeforeAction == 0 {
		t.Errorf("report %+v: want steps, actions and approvals", rep)
	}
	t.Logf("claim %v, run %v, total %v", rep.GuestUp, rep.RunTime, rep.Total)
	ns, name, _ := strings.Cut(rep.Pooled, "/")
	if _, err := b.cli.set.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
		t.Errorf("the claimed Pod %s is still there after the exercise", rep.Pooled)
	}
}
