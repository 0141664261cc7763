// Package prereq is the one way tests handle a missing prerequisite (an X
// server, a Docker engine, a cross toolchain, Lima): skip, naming what is
// missing, or fail where the environment says it must be there (CI sets
// AGENTD_REQUIRE_X, AGENTD_REQUIRE_DOCKER and AGENTD_REQUIRE_KUBERNETES), so a missing install is
// never a silent pass.
package prereq

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Kind is a group of prerequisites, named by the environment variable that
// makes them required.
type Kind string

// The kinds of prerequisites.
const (
	X      Kind = "AGENTD_REQUIRE_X"      // Xvfb, openbox, the desktop's applications, a built agentd
	Docker Kind = "AGENTD_REQUIRE_DOCKER" // a Docker engine and the guest image
	Cross  Kind = "AGENTD_REQUIRE_CROSS"  // the arm64 agentd, qemu-user
	Lima   Kind = "AGENTD_REQUIRE_LIMA"   // limactl
	// Kubernetes: a cluster (shared/tools/kubernetes's, or
	// $AGENTD_KUBECONFIG's) with the guest image (internal/k8stest).
	Kubernetes Kind = "AGENTD_REQUIRE_KUBERNETES"
	// Host: this machine's tools and kernel: the go command, bash, a
	// pseudo-terminal, Landlock.
	Host Kind = "AGENTD_REQUIRE_HOST"
	Root Kind = "AGENTD_REQUIRE_ROOT" // running as root
)

// Required reports whether the environment requires k's prerequisites.
func (k Kind) Required() bool { return os.Getenv(string(k)) != "" }

// Missing ends the test because a prerequisite of kind k is missing: it is
// skipped with the reason, or failed when k is required.
func Missing(tb testing.TB, k Kind, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if k.Required() {
		tb.Fatalf("missing prerequisite: %s (%s is set)", msg, k)
		return
	}
	tb.Skipf("missing prerequisite: %s (set %s=1 to fail instead)", msg, k)
}

// Programs ends the test as Missing does when a program is not on $PATH.
func Programs(tb testing.TB, k Kind, programs ...string) {
	tb.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			Missing(tb, k, "%s is not installed (run 'make deps'): %v", p, err)
		}
	}
}

// OptIn returns the value of env, which asks for a test that is no check
// but a measurement or a long soak; unset, the test is skipped, saying
// what to set. A skip here is never a failure: nothing is missing.
func OptIn(tb testing.TB, env, what string) string {
	tb.Helper()
	v := os.Getenv(env)
	if v == "" {
		tb.Skipf("opt-in: set %s to run %s", env, what)
	}
	return v
}

// Full skips a test under -short: it runs the whole desktop (Firefox and
// the rest), minutes that a quick run leaves out by asking for it.
func Full(tb testing.TB, what string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("-short: %s is a full run", what)
	}
}
