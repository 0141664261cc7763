package kubernetes

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/guest/backend/backendtest"
	"github.com/agentd-dev/agentd/internal/k8stest"
)

// TestConformance runs the guest backends' suite on real Pods of the test
// cluster. The named guest's other process (this test binary again) and
// Down by name go through the registered backend (Default), which finds
// the cluster through $KUBECONFIG, as agentctl does.
func TestConformance(t *testing.T) {
	var b *Backend
	backendtest.Run(t, backendtest.Factory{
		New: func(t *testing.T) (backend.Backend, backend.Spec) {
			b = testBackend(t)
			t.Setenv("KUBECONFIG", k8stest.Kubeconfig(t))
			return b, backend.Spec{Width: 640, Height: 480}
		},
		// The entrypoint writes the X cookie into the home at every start.
		ReadBack:   ".Xauthority",
		AnyContent: true,
		Left: func(d backend.Description) []string {
			c, err := b.connect()
			if err != nil {
				return []string{err.Error()}
			}
			ns, name, _ := strings.Cut(d.Instance, "/")
			return left(c, ns, name, filepath.Dir(d.TokenFile))
		},
		// As a person would: kubectl delete pod --grace-period=0 --force.
		Vanish: func(t *testing.T, d backend.Description) {
			c, err := b.connect()
			if err != nil {
				t.Fatal(err)
			}
			ns, name, _ := strings.Cut(d.Instance, "/")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			zero := int64(0)
			if err := c.set.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
				t.Fatalf("delete the Pod from outside: %v", err)
			}
		},
	})
}
