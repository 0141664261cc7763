package vm

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/randhex"
	"github.com/agentd-dev/agentd/tools/exercise/desktop"
)

// provisionImage is the Debian base the test starts from
// (docker/make-base-images.sh makes it where it cannot be pulled).
const provisionImage = "debian:bookworm-slim"

// TestProvisionInDebian runs the guest side of Up for real, in a Debian
// bookworm container standing in for the VM: systemd as PID 1 (what a
// Debian cloud image boots), the staged files copied in as limactl copy
// would, then Up's own guest commands in Up's order: setup.sh, which
// provisions with docker/provision.sh; the token on standard input; the
// desktop service started by systemd; wait-ready.sh. Then the desktop is
// checked (agentd healthy, each process running as the desktop user), the
// commands behind Logs and ReadFile are run (the exercise's form page is
// read back and checked), and the service is stopped.
//
// It takes minutes (the desktop's packages are installed) and needs Docker,
// the base image, and agentd and pickup-form for this machine's
// architecture (make agentd-linux-amd64 or -arm64): it skips unless AGENTD_TEST_PROVISION is
// set, and then fails when something is missing.
func TestProvisionInDebian(t *testing.T) {
	prereq.OptIn(t, "AGENTD_TEST_PROVISION", "the provisioning test (installs a desktop in a Debian container, minutes)")
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatalf("missing the docker CLI: %v", err)
	}
	// The exercise's desktop, as the vm backend asks for it.
	spec, err := desktop.Apps.Image(filepath.Join(t.TempDir(), "config"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Config{Repo: "..", Size: fmt.Sprintf("%dx%d", desktop.ScreenWidth, desktop.ScreenHeight), Apps: spec.Apps, URL: spec.URL, File: spec.File, ConfigDir: spec.ConfigDir}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"agentd": cfg.Agentd, "pickup-form": cfg.PickupForm} {
		if err := checkBinary(name, path, cfg.Arch); err != nil {
			t.Fatalf("missing %s for the container: %v", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if _, err := docker(ctx, nil, "image", "inspect", provisionImage); err != nil {
		t.Fatalf("missing the base image %s (make docker-base): %v", provisionImage, err)
	}
	network := bridgeOrHost(t, ctx)

	// The VM's base: Debian with systemd and sudo, as in the cloud image.
	suffix := randhex.String(4)
	base := "agentd-vm-test-base:" + suffix
	prep := "agentd-vm-test-prep-" + suffix
	run(t, ctx, nil, "run", "-d", "--name", prep, "--network", network, provisionImage, "sleep", "infinity")
	t.Cleanup(func() { _, _ = docker(context.Background(), nil, "rm", "-f", prep) })
	start := time.Now()
	run(t, ctx, nil, "exec", prep, "bash", "-c",
		"apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd sudo >/dev/null")
	run(t, ctx, nil, "commit", prep, base)
	t.Cleanup(func() { _, _ = docker(context.Background(), nil, "rmi", "-f", base) })
	run(t, ctx, nil, "rm", "-f", prep)
	t.Logf("base with systemd: %v", time.Since(start).Round(time.Second))

	name := "agentd-vm-test-" + suffix
	run(t, ctx, nil, "run", "-d", "--name", name, "--network", network,
		"--tmpfs", "/run", "--tmpfs", "/run/lock", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro",
		base, "/lib/systemd/systemd")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := docker(context.Background(), nil, "exec", name, "journalctl", "--no-pager", "-n", "60")
			t.Logf("the container's journal:\n%s", out)
		}
		_, _ = docker(context.Background(), nil, "rm", "-f", name)
	})
	waitBooted(t, ctx, name)

	// limactl copy --recursive STAGE NAME:/tmp/agentd-setup
	stageDir := filepath.Join(t.TempDir(), "stage")
	if err := stage(cfg, stageDir); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, nil, "cp", stageDir, name+":"+stageInVM)

	guestRun := func(stdin []byte, cmd ...string) string {
		t.Helper()
		return run(t, ctx, stdin, append([]string{"exec", "-i", name}, cmd...)...)
	}
	start = time.Now()
	guestRun(nil, setupCommand()...)
	t.Logf("setup.sh (provision.sh runtime and the install): %v", time.Since(start).Round(time.Second))
	token := "provision-test-token-" + suffix + "\n"
	guestRun([]byte(token), tokenCommand()...)
	start = time.Now()
	guestRun(nil, startCommand()...)
	guestRun(nil, waitCommand(5*time.Minute)...)
	t.Logf("desktop start → agentd healthy: %v", time.Since(start).Round(time.Millisecond))

	// The staged directory is gone; the token is the desktop user's alone.
	if out, err := docker(ctx, nil, "exec", name, "test", "-e", stageInVM); err == nil {
		t.Errorf("%s is still in the guest: %s", stageInVM, out)
	}
	for _, f := range []string{"/var/lib/agentd/token", "/run/agentd/token"} {
		if got := guestRun(nil, "stat", "-c", "%a %U", f); strings.TrimSpace(got) != "600 agent" {
			t.Errorf("%s: mode and owner %q, want 600 agent", f, got)
		}
		if got := guestRun(nil, "cat", f); got != token {
			t.Errorf("%s holds %q, want the delivered token", f, got)
		}
	}
	// agentd's health, through the Docker image's own healthcheck.
	guestRun(nil, "sudo", "-u", "agent", "/opt/agentd/healthcheck.sh")
	// The whole desktop runs, as the desktop user.
	ps := guestRun(nil, "ps", "-eo", "user:16,comm")
	for _, comm := range []string{"Xvfb", "openbox", "pickup-form", "firefox-esr", "mousepad", "agentd"} {
		if !psHas(ps, "agent", comm) {
			t.Errorf("no %s running as agent:\n%s", comm, ps)
		}
	}

	// The commands behind Guest.Logs and Guest.ReadFile: the browser
	// loaded the form with the exercise's layout, read back the way the
	// exercise reads it from a VM.
	if logs := guestRun(nil, logsCommand(50)...); !strings.Contains(logs, "entrypoint: started agentd") {
		t.Errorf("Logs' command:\n%s", logs)
	}
	remote := containerFiles(func(ctx context.Context, rel string) ([]byte, error) {
		out, err := docker(ctx, nil, append([]string{"exec", name}, readCommand(path.Join(guestHome, rel))...)...)
		if err != nil && strings.Contains(err.Error(), "No such file or directory") {
			return nil, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
		}
		return []byte(out), err
	})
	if err := desktop.WaitPage(ctx, remote); err != nil {
		t.Errorf("the exercise's form page: %v", err)
	}
	if note, err := remote.ReadFile(ctx, spec.File); err != nil || len(note) != 0 {
		t.Errorf("the note Mousepad opened: %q, %v; want an empty file", note, err)
	}

	// Stopping the service stops the desktop cleanly: the entrypoint
	// alone gets SIGTERM, ends its children and exits 0.
	guestRun(nil, "systemctl", "stop", unitName)
	if out, _ := docker(ctx, nil, "exec", name, "systemctl", "is-active", unitName); strings.TrimSpace(out) != "inactive" {
		t.Errorf("after stop the service is %q, want inactive (not failed)", out)
	}
	if ps := guestRun(nil, "ps", "-eo", "user:16,comm"); psHas(ps, "agent", "agentd") || psHas(ps, "agent", "Xvfb") {
		t.Errorf("desktop processes left after stop:\n%s", ps)
	}
}

// waitBooted waits until systemd in the container has booted: --wait
// returns then, but fails at once while systemd is not answering yet.
// Degraded (a unit a container cannot run) is as good as running here.
func waitBooted(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		out, err := docker(ctx, nil, "exec", name, "systemctl", "is-system-running", "--wait")
		if s := strings.TrimSpace(out); s == "running" || s == "degraded" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("systemd in the container did not boot: %q %v", out, err)
		case <-tick.C:
		}
	}
}

// psHas reports whether ps output has a process comm of user.
func psHas(ps, user, comm string) bool {
	sc := bufio.NewScanner(strings.NewReader(ps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == user && f[1] == comm {
			return true
		}
	}
	return false
}

// docker runs the docker CLI and returns its standard output; an error
// carries its standard error.
func docker(ctx context.Context, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("docker %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

func run(t *testing.T, ctx context.Context, stdin []byte, args ...string) string {
	t.Helper()
	out, err := docker(ctx, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// bridgeOrHost picks the container network for apt: Docker's bridge when
// it reaches the mirror of this machine's apt sources, else the host's.
func bridgeOrHost(t *testing.T, ctx context.Context) string {
	t.Helper()
	host, port := aptMirror(t)
	probe := fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", host, port)
	if _, err := docker(ctx, nil, "run", "--rm", provisionImage, "timeout", "10", "bash", "-c", probe); err != nil {
		t.Logf("the bridge does not reach %s:%s, using the host's network: %v", host, port, err)
		return "host"
	}
	return "bridge"
}

// aptMirror is the host and port of the first Debian source in this
// machine's apt configuration (one-line or deb822 format).
func aptMirror(t *testing.T) (string, string) {
	t.Helper()
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	for _, f := range append([]string{"/etc/apt/sources.list"}, files...) {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			fields := strings.Fields(line)
			var uri string
			switch {
			case len(fields) >= 2 && fields[0] == "URIs:":
				uri = fields[1]
			case len(fields) >= 3 && fields[0] == "deb":
				uri = fields[1]
				if strings.HasPrefix(uri, "[") {
					uri = fields[2]
				}
			}
			u, err := url.Parse(uri)
			if uri == "" || err != nil || u.Hostname() == "" || !strings.Contains(u.Path, "debian") {
				continue
			}
			port := u.Port()
			if port == "" {
				port = map[string]string{"https": "443"}[u.Scheme]
				if port == "" {
					port = "80"
				}
			}
			return u.Hostname(), port
		}
	}
	t.Fatalf("no Debian source in /etc/apt/sources.list{,.d/*} (on %s)", runtime.GOOS)
	return "", ""
}

// containerFiles reads the provisioned container's files as a VM guest's
// ReadFile does.
type containerFiles func(ctx context.Context, rel string) ([]byte, error)

func (f containerFiles) ReadFile(ctx context.Context, rel string) ([]byte, error) { return f(ctx, rel) }
