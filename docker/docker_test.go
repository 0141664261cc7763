package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/prereq"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/agentd-dev/agentd/guest"
)

// These are integration tests against the local Docker engine. They skip
// when the engine is unreachable or the Dockerfile's base images are
// missing (docker/make-base-images.sh makes them), unless
// AGENTD_REQUIRE_DOCKER is set: then they fail. The guest image is built
// once per run through the API; the layer cache makes later runs quick.

const testImage = DefaultImage

var (
	buildOnce sync.Once
	buildErr  error
)

// needImage skips or fails as described above, then builds the image from
// this repository (once per test binary) and returns an engine client.
func needImage(t *testing.T) *client.Client {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		prereq.Missing(t, prereq.Docker, format, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := NewClient(ctx)
	if err != nil {
		skip("docker integration tests need a Docker engine: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bases, err := baseImages(filepath.Join(repo, DefaultDockerfile))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bases {
		if _, err := cli.ImageInspect(ctx, b); err != nil {
			skip("base image %s is missing (%v): run docker/make-base-images.sh, or make docker-test", b, err)
		}
	}
	buildOnce.Do(func() {
		// A build that changes the base layers takes longer than go test's
		// default timeout: the build gets what the tests leave of it, and
		// the layers it finished stay cached for the next run.
		ctx, cancel := context.WithCancel(context.Background())
		if deadline, ok := t.Deadline(); ok {
			ctx, cancel = context.WithDeadline(context.Background(), deadline.Add(-testsNeed))
		}
		defer cancel()
		start := time.Now()
		var lines []string
		buildErr = Build(ctx, BuildOptions{Context: repo, Tag: testImage}, func(l string) { lines = append(lines, l) })
		t.Logf("image build: %v, %d lines of output", time.Since(start).Round(time.Millisecond), len(lines))
		if buildErr != nil && len(lines) > 0 {
			t.Logf("last build output:\n%s", strings.Join(lines[max(0, len(lines)-30):], "\n"))
		}
		if ctx.Err() != nil {
			buildErr = fmt.Errorf("%w: %w", errBuildTime, buildErr)
		}
	})
	if errors.Is(buildErr, errBuildTime) {
		skip("the image build did not finish within this run's -timeout (%v); make docker-test allows it the time", buildErr)
	}
	if buildErr != nil {
		t.Fatalf("build: %v", buildErr)
	}
	return cli
}

// testsNeed is what the tests need after the build, at most.
const testsNeed = 5 * time.Minute

var errBuildTime = errors.New("out of time")

func upGuest(t *testing.T, cfg Config) *Guest {
	t.Helper()
	cfg.Image = testImage
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	g, err := Up(ctx, cfg, func(l string) { t.Logf("up: %s", l) })
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("container start → agentd ready: %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := g.Down(context.Background()); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	return g
}

func token(t *testing.T, g *Guest) string {
	t.Helper()
	tok, err := g.Token()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// screenshot takes one and checks it is a PNG of the guest's screen size.
func screenshot(t *testing.T, c *guest.Client, w, h int) image.Image {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	shot, err := c.Screenshot(ctx)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	t.Logf("screenshot round trip: %v (%d bytes)", time.Since(start).Round(time.Microsecond), len(shot.PNG))
	img, err := png.Decode(bytes.NewReader(shot.PNG))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("screenshot is %dx%d, want %dx%d", b.Dx(), b.Dy(), w, h)
	}
	if s := shot.Transform.Screen; s.W != w || s.H != h {
		t.Fatalf("transform says the screen is %+v, want %dx%d", s, w, h)
	}
	return img
}

// waitHealthy waits for the engine's own verdict from the image's HEALTHCHECK.
func waitHealthy(t *testing.T, g *Guest) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	for {
		st, err := g.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Health == "healthy" {
			t.Logf("engine reports healthy after a further %v", time.Since(start).Round(time.Millisecond))
			return
		}
		if !st.Running {
			t.Fatalf("container %s (exit %d) while waiting for healthy", st.State, st.ExitCode)
		}
		select {
		case <-ctx.Done():
			logs, _ := g.Logs(context.Background(), 30)
			t.Fatalf("not healthy (%q) after 60s; logs:\n%s", st.Health, logs)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func assertGone(t *testing.T, cli *client.Client, g *Guest) {
	t.Helper()
	if _, err := cli.ContainerInspect(context.Background(), g.ID, client.ContainerInspectOptions{}); !isNotFound(err) {
		t.Errorf("container %s still exists after Down (inspect: %v)", g.Name, err)
	}
	if _, err := os.Stat(g.StateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory %s still exists after Down (%v)", g.StateDir, err)
	}
}

func TestUpScreenshotRestartDown(t *testing.T) {
	cli := needImage(t)
	g := upGuest(t, Config{Size: "1280x800"})
	if !strings.HasPrefix(g.Addr, "unix:") {
		t.Fatalf("Addr %q: want a unix socket", g.Addr)
	}
	waitHealthy(t, g)
	tok := token(t, g)
	c := agentdtest.Dial(t, g.Addr, tok)
	screenshot(t, c, 1280, 800)
	c.Close()

	// A restart of the same container comes back healthy: the entrypoint
	// clears what the last run left.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	timeout := 5
	if _, err := cli.ContainerRestart(ctx, g.ID, client.ContainerRestartOptions{Timeout: &timeout}); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if err := g.waitReady(ctx, time.Minute); err != nil {
		logs, _ := g.Logs(ctx, 30)
		t.Fatalf("after restart: %v\n%s", err, logs)
	}
	waitHealthy(t, g)
	screenshot(t, agentdtest.Dial(t, g.Addr, tok), 1280, 800)

	start := time.Now()
	if err := g.Down(ctx); err != nil {
		t.Fatalf("Down: %v", err)
	}
	t.Logf("Down: %v", time.Since(start).Round(time.Millisecond))
	assertGone(t, cli, g)
	if err := g.Down(ctx); err != nil {
		t.Fatalf("second Down: %v", err)
	}
}

func TestHardening(t *testing.T) {
	cli := needImage(t)
	g := upGuest(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cli.ContainerInspect(ctx, g.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, hc := res.Container.Config, res.Container.HostConfig
	tok := token(t, g)

	if c.User == "" || c.User == "0" || strings.HasPrefix(c.User, "0:") || strings.HasPrefix(c.User, "root") {
		t.Errorf("User = %q: want a non-root uid:gid", c.User)
	}
	if !slices.Equal(hc.CapDrop, []string{"ALL"}) || len(hc.CapAdd) != 0 {
		t.Errorf("CapDrop %v CapAdd %v: want ALL dropped and nothing added", hc.CapDrop, hc.CapAdd)
	}
	if hc.Privileged {
		t.Error("Privileged")
	}
	if !slices.Contains(hc.SecurityOpt, "no-new-privileges:true") {
		t.Errorf("SecurityOpt = %v: want no-new-privileges", hc.SecurityOpt)
	}
	if !hc.ReadonlyRootfs {
		t.Error("root filesystem is writable")
	}
	for _, p := range []string{"/tmp", "/home/agent"} {
		if _, ok := hc.Tmpfs[p]; !ok {
			t.Errorf("no tmpfs at %s (Tmpfs %v)", p, hc.Tmpfs)
		}
	}
	if hc.Memory != DefaultMemory || hc.MemorySwap != DefaultMemory {
		t.Errorf("Memory %d MemorySwap %d: want %d each", hc.Memory, hc.MemorySwap, DefaultMemory)
	}
	if hc.PidsLimit == nil || *hc.PidsLimit != DefaultPIDs {
		t.Errorf("PidsLimit = %v: want %d", hc.PidsLimit, DefaultPIDs)
	}
	info, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantCPUs := int64(min(DefaultCPUs, info.Info.NCPU)) * 1e9
	if hc.NanoCPUs != wantCPUs {
		t.Errorf("NanoCPUs = %d: want %d", hc.NanoCPUs, wantCPUs)
	}
	if len(hc.Ulimits) != 1 || hc.Ulimits[0].Name != "nofile" || hc.Ulimits[0].Soft != DefaultOpenFiles || hc.Ulimits[0].Hard != DefaultOpenFiles {
		t.Errorf("Ulimits = %v: want nofile %d", hc.Ulimits, DefaultOpenFiles)
	}
	if hc.NetworkMode != "none" {
		t.Errorf("NetworkMode = %q: want none", hc.NetworkMode)
	}
	if len(hc.PortBindings) != 0 || hc.PublishAllPorts {
		t.Errorf("ports published: %v (all: %v)", hc.PortBindings, hc.PublishAllPorts)
	}
	if ns := res.Container.NetworkSettings; ns != nil && len(ns.Ports) != 0 {
		t.Errorf("NetworkSettings.Ports = %v: want none", ns.Ports)
	}

	// The token is nowhere in what the engine shows: not in the
	// environment, the command line, the labels, nor anywhere else.
	if bytes.Contains(res.Raw, []byte(tok)) {
		t.Error("the token appears in docker inspect output")
	}
	for _, kv := range c.Env {
		if strings.Contains(kv, tok) {
			t.Errorf("token in env %q", kv)
		}
	}
	logs, err := g.Logs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs, tok) {
		t.Error("the token appears in the container's logs")
	}

	// The state directory and token file are private on the host.
	for p, want := range map[string]os.FileMode{g.StateDir: 0o700, g.TokenFile: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %04o, want %04o", p, fi.Mode().Perm(), want)
		}
	}

	// And from inside: no capabilities, no_new_privs, not root, a
	// read-only root, no network interface but loopback.
	status, err := g.ReadFile(ctx, "/proc/1/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "NoNewPrivs:\t1"} {
		if !strings.Contains(string(status), want) {
			t.Errorf("/proc/1/status lacks %q:\n%s", want, status)
		}
	}
	// The limits as the container's processes meet them: open files, and
	// CPU time (the cgroup's quota, v2 or v1).
	limits := execOutput(t, cli, g, "bash", "-c", "ulimit -Sn; ulimit -Hn")
	if want := fmt.Sprintf("%d\n%d\n", DefaultOpenFiles, DefaultOpenFiles); limits != want {
		t.Errorf("open files soft and hard %q: want %q", limits, want)
	}
	quota := strings.Fields(execOutput(t, cli, g, "bash", "-c",
		"cat /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us"))
	var q, period int64
	if len(quota) != 2 || quota[0] == "max" || quota[0] == "-1" {
		t.Errorf("CPU quota %q: want a limit", quota)
	} else if _, err := fmt.Sscan(quota[0]+" "+quota[1], &q, &period); err != nil || q*1e9/period != wantCPUs {
		t.Errorf("CPU quota %q: want %d CPUs (%v)", quota, wantCPUs/1e9, err)
	}
	if strings.Contains(string(status), "Uid:\t0\t") {
		t.Errorf("pid 1 runs as root:\n%s", status)
	}
	mounts, err := g.ReadFile(ctx, "/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[1] == "/" && !slices.Contains(strings.Split(f[3], ","), "ro") {
			t.Errorf("root is mounted %s", f[3])
		}
	}
	dev, err := g.ReadFile(ctx, "/proc/net/dev")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(dev), "\n")[2:] {
		if name, _, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && name != "lo" {
			t.Errorf("network interface %s exists", name)
		}
	}
	if _, err := g.ReadFile(ctx, "/home/agent/no-such-file"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestTwoGuestsAreIsolated(t *testing.T) {
	cli := needImage(t)
	a := upGuest(t, Config{Size: "1024x768"})
	b := upGuest(t, Config{Size: "800x600", Network: true})
	if a.ID == b.ID || a.StateDir == b.StateDir || a.Addr == b.Addr {
		t.Fatalf("guests share a container, directory or socket: %+v %+v", a, b)
	}
	ta, tb := token(t, a), token(t, b)
	if ta == tb {
		t.Fatal("two guests got the same token")
	}
	screenshot(t, agentdtest.Dial(t, a.Addr, ta), 1024, 768)
	cb := agentdtest.Dial(t, b.Addr, tb)
	screenshot(t, cb, 800, 600)
	cb.Close() // agentd admits one controller at a time

	// One guest's token opens no other guest.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c, err := guest.Dial(ctx, b.Addr, ta); err == nil {
		c.Close()
		t.Fatal("guest b accepted guest a's token")
	}

	// With a network, agentd is on the container's loopback and the unix
	// socket only: nothing is published, and the bridge address — which
	// every container on the bridge reaches, as the host does — has no
	// agentd behind it.
	res, err := cli.ContainerInspect(ctx, b.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hc := res.Container.HostConfig; len(hc.PortBindings) != 0 || hc.PublishAllPorts {
		t.Errorf("ports published: %v (all: %v)", hc.PortBindings, hc.PublishAllPorts)
	}
	var bridge netip.Addr
	if ns := res.Container.NetworkSettings; ns != nil {
		if ep := ns.Networks["bridge"]; ep != nil {
			bridge = ep.IPAddress
		}
	}
	if !bridge.IsValid() {
		t.Fatalf("guest b has no bridge address: %+v", res.Container.NetworkSettings)
	}
	if conn, err := net.DialTimeout("tcp", netip.AddrPortFrom(bridge, 7010).String(), 10*time.Second); err == nil {
		conn.Close()
		t.Errorf("agentd answers on the bridge address %s", bridge)
	}
	listening := execOutput(t, cli, b, "bash", "-c", "tail -n +2 /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == \"0A\" {print $2}'")
	for _, local := range strings.Fields(listening) {
		// 0100007F is 127.0.0.1 (little-endian), the v6 form ::1.
		if !strings.HasPrefix(local, "0100007F:") && !strings.HasPrefix(local, "00000000000000000000000001000000:") {
			t.Errorf("a TCP listener on %s in the guest: want loopback only (all: %s)", local, listening)
		}
	}

	for _, g := range []*Guest{a, b} {
		if err := g.Down(ctx); err != nil {
			t.Fatal(err)
		}
		assertGone(t, cli, g)
	}
}

func TestAppsStart(t *testing.T) {
	cli := needImage(t)
	g := upGuest(t, Config{Size: "1280x800", Apps: []string{"firefox", "mousepad"}})
	c := agentdtest.Dial(t, g.Addr, token(t, g))
	checkMilestones(t, g, "up", "prepared", "created", "begin", "xvfb", "openbox", "firefox", "mousepad", "agentd-started", "healthy")
	// The entrypoint waited for both windows before starting agentd; once
	// the screen settles they are drawn.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Wait(ctx); err != nil {
		t.Fatalf("wait: %v", err)
	}
	img := screenshot(t, c, 1280, 800)
	colours := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[r>>8<<16|g>>8<<8|bl>>8] = true
		}
	}
	if len(colours) < 16 {
		t.Errorf("screenshot has %d colours: no windows drawn?", len(colours))
	}

	// Firefox keeps its own sandbox: each content process adds a seccomp
	// filter on top of the engine's one once it has started up (user
	// namespaces, its other layer, need capabilities the container lacks).
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := execOutput(t, cli, g, "bash", "-c", `for p in /proc/[0-9]*; do
			case "$(cat $p/comm 2>/dev/null)" in "Web Content"|"Isolated Web Co") grep "^Seccomp_filters:" $p/status;; esac
		done`)
		f := strings.Fields(out)
		sandboxed := len(f) > 0
		for i := 1; i < len(f); i += 2 {
			sandboxed = sandboxed && f[i] != "0" && f[i] != "1"
		}
		if sandboxed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Firefox content processes without their own seccomp filter after 30s:\n%s", out)
		}
		time.Sleep(time.Second)
	}
}

// execOutput runs a command in the guest as its user and returns stdout.
func execOutput(t *testing.T, cli *client.Client, g *Guest, cmd ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ex, err := cli.ExecCreate(ctx, g.ID, client.ExecCreateOptions{User: g.user, AttachStdout: true, AttachStderr: true, Cmd: cmd})
	if err != nil {
		t.Fatal(err)
	}
	att, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer att.Close()
	var out, errOut bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errOut, att.Reader); err != nil {
		t.Fatal(err)
	}
	if errOut.Len() > 0 {
		t.Logf("%v: stderr: %s", cmd, errOut.String())
	}
	return out.String()
}

// BenchmarkScreenshotTransport measures the screenshot round trip through
// the unix socket in the bind-mounted directory (the only way in; nothing
// is published, a network or not).
//
//	AGENTD_REQUIRE_DOCKER=1 go test -run '^$' -bench ScreenshotTransport -count 5 ./docker/
func BenchmarkScreenshotTransport(b *testing.B) {
	g := benchGuest(b)
	tok, err := g.Token()
	if err != nil {
		b.Fatal(err)
	}
	for _, tr := range []struct{ name, addr string }{{"unix", g.Addr}} {
		b.Run(tr.name, func(b *testing.B) {
			ctx := context.Background()
			c, err := guest.Dial(ctx, tr.addr, tok)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			var size int
			for b.Loop() {
				shot, err := c.Screenshot(ctx)
				if err != nil {
					b.Fatal(err)
				}
				size = len(shot.PNG)
			}
			b.ReportMetric(float64(size), "png-bytes")
		})
	}
}

// benchGuest starts a guest with a network and a browser and editor on
// screen, from an image already built.
func benchGuest(b *testing.B) *Guest {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cli, err := NewClient(ctx)
	if err != nil {
		prereq.Missing(b, prereq.Docker, "requires a Docker engine: %v", err)
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(ctx, testImage); err != nil {
		prereq.Missing(b, prereq.Docker, "requires the %s image (make docker-image): %v", testImage, err)
	}
	g, err := Up(ctx, Config{Image: testImage, Network: true, Apps: []string{"mousepad", "firefox"}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := g.Down(context.Background()); err != nil {
			b.Error(err)
		}
	})
	return g
}

// checkMilestones checks that the guest's start milestones are these, in
// this order (the engine's "started" may come before or after the
// entrypoint's "begin", so it is only checked to be there).
func checkMilestones(t *testing.T, g *Guest, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ms, err := g.StartMilestones(ctx)
	if err != nil {
		t.Fatalf("StartMilestones: %v", err)
	}
	var got []string
	started := false
	for i, m := range ms {
		if i > 0 && m.At.Before(ms[i-1].At) {
			t.Errorf("milestone %s at %v comes before %s at %v", m.Name, m.At, ms[i-1].Name, ms[i-1].At)
		}
		if m.Name == "started" {
			started = true
			continue
		}
		got = append(got, m.Name)
	}
	if !started || !slices.Equal(got, want) {
		t.Errorf("start milestones %v (started: %v); want %v", got, started, want)
	}
	for _, m := range ms {
		t.Logf("  %-15s +%v", m.Name, m.At.Sub(ms[0].At).Round(time.Millisecond))
	}
}
