// Package k8stest gives tests a real Kubernetes cluster with the guest
// image in it: $AGENTD_KUBECONFIG's when set (used as it is), else the
// single-node cluster of shared/tools/kubernetes (its README), started on a
// test's first need and stopped when the package's tests end, with the
// Docker engine's guest image imported into it (docker save; the cluster
// has no registry). A missing cluster, tool or image skips the test
// through prereq, or fails it where AGENTD_REQUIRE_KUBERNETES is set.
//
// The tools' cluster has fixed ports, so one runs per machine: the
// package holds an exclusive lock on <tmp>/agentd-k8s-test.lock from its
// start to its stop, and a second test binary waits for it.
package k8stest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/prereq"
)

// Image is the guest image the tests run: the Docker guest's
// (make docker-image), imported into the cluster.
const Image = "agentd-guest"

var (
	once       sync.Once
	kubeconfig string
	missing    string // why there is no cluster
	stop       func() // stops what this process started
)

// Main runs the package's tests and stops the cluster if one of them
// started it; call it from TestMain: os.Exit(k8stest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if stop != nil {
		stop()
	}
	return code
}

// Kubeconfig returns the admin kubeconfig of a cluster with Image, starting
// it on the first call; the test ends as prereq.Missing when there is none.
func Kubeconfig(t testing.TB) string {
	t.Helper()
	once.Do(func() { kubeconfig, missing = start() })
	if missing != "" {
		prereq.Missing(t, prereq.Kubernetes, "%s", missing)
	}
	return kubeconfig
}

// ToolsDir finds shared/tools/kubernetes: $AGENTD_K8S_DIR, else the first
// one above the working directory.
func ToolsDir() string {
	if d := os.Getenv("AGENTD_K8S_DIR"); d != "" {
		return d
	}
	d, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "shared/tools/kubernetes/cluster-up.sh")); err == nil {
			return filepath.Join(d, "shared/tools/kubernetes")
		}
		if d == filepath.Dir(d) {
			return ""
		}
		d = filepath.Dir(d)
	}
}

// StateDir is the tools' cluster's state: the tools' default, so a
// cluster someone started by hand is the one found (cluster-up.sh is
// idempotent).
func StateDir() string { return filepath.Join(os.TempDir(), "agentd-k8s") }

// start brings a cluster up, or says why it cannot.
func start() (config, why string) {
	if c := os.Getenv("AGENTD_KUBECONFIG"); c != "" {
		return c, ""
	}
	tools := ToolsDir()
	if tools == "" {
		return "", "no shared/tools/kubernetes above the working directory and AGENTD_K8S_DIR, AGENTD_KUBECONFIG unset"
	}
	if os.Geteuid() != 0 {
		return "", "the tools' cluster runs containerd and a kubelet: root is needed"
	}
	for _, p := range []string{"containerd", "runc", "iptables", "docker"} {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Sprintf("%s is not installed (make deps): %v", p, err)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		return "", "the CNI plugins are not installed (make deps: containernetworking-plugins)"
	}
	imageID, err := output("docker", "image", "inspect", "-f", "{{.Id}}", Image)
	if err != nil {
		return "", fmt.Sprintf("the guest image %s is not in the Docker engine (make docker-image): %v", Image, err)
	}

	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "agentd-k8s-test.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", err.Error()
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return "", "lock: " + err.Error()
	}
	state := StateDir()
	config = filepath.Join(state, "admin.kubeconfig")
	wasUp := ready(tools, config)
	release := func() {
		if !wasUp {
			if err := script(tools, "cluster-down.sh", state); err != nil {
				fmt.Fprintf(os.Stderr, "k8stest: %v\n", err)
			}
		}
		lock.Close()
	}
	if !wasUp {
		begun := time.Now()
		if err := script(tools, "cluster-up.sh", state); err != nil {
			release()
			return "", err.Error()
		}
		fmt.Fprintf(os.Stderr, "k8stest: cluster up in %.1fs\n", time.Since(begun).Seconds())
	}
	stop = release
	// An image already imported is not imported again: the cluster keeps
	// its images across stops.
	idFile := filepath.Join(state, "agentd-guest.id")
	if old, _ := os.ReadFile(idFile); strings.TrimSpace(string(old)) != imageID {
		begun := time.Now()
		tar := filepath.Join(state, "agentd-guest.tar")
		if err := run("docker", "save", "-o", tar, Image); err != nil {
			return "", err.Error()
		}
		err := script(tools, "cluster-up.sh", state, "import", tar)
		os.Remove(tar)
		if err != nil {
			return "", err.Error()
		}
		if err := os.WriteFile(idFile, []byte(imageID+"\n"), 0o600); err != nil {
			return "", err.Error()
		}
		fmt.Fprintf(os.Stderr, "k8stest: imported %s in %.1fs\n", Image, time.Since(begun).Seconds())
	}
	return config, ""
}

// ready reports whether the cluster answers with config.
func ready(tools, config string) bool {
	if _, err := os.Stat(config); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kubectl := filepath.Join(cacheBin(), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		kubectl = "kubectl"
	}
	return exec.CommandContext(ctx, kubectl, "--kubeconfig", config, "get", "--raw", "/readyz").Run() == nil
}

// cacheBin is where the tools unpack the cluster's binaries (bin.sh).
func cacheBin() string {
	if b := os.Getenv("K8S_BIN"); b != "" {
		return b
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "agentd-k8s/v1.37.2/bin")
}

// script runs one of the tools' scripts, its output in a log beside the
// state (the cluster's daemons inherit it: a pipe would never close).
func script(tools, name string, args ...string) error {
	if err := os.MkdirAll(StateDir(), 0o700); err != nil {
		return err
	}
	logFile := filepath.Join(StateDir(), "k8stest.log")
	log, err := os.OpenFile(logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(filepath.Join(tools, name), args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w (see %s)", name, strings.Join(args, " "), err, logFile)
	}
	return nil
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func output(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	return strings.TrimSpace(string(out)), err
}
