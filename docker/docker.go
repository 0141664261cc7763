// Package docker runs agentd guests as Docker containers (docs/design.md, "Guests"),
// through the Docker Engine API: it builds or finds the guest image
// (docker/Dockerfile), creates and starts one hardened container per
// desktop, waits until agentd answers, reads result files back out, and
// stops and removes the container. It is pure Go: the host needs no cgo and
// no X11.
//
// Hardening (docs/design.md, "Safety"), all on by default: the container runs as the image's
// non-root user with every capability dropped, no-new-privileges, a
// read-only root filesystem (tmpfs for /tmp and the user's home), memory,
// CPU, pids and open-files limits, and no network at all. agentd is reached
// without a TCP port: its unix socket appears in a private directory of the
// host (0700) that is bind-mounted into the container, and that directory
// is also how the token comes in. The token is 32 random bytes, fresh for
// every container, in a 0600 file; it never appears in the container's
// environment, command line, labels or logs, and the desktop's applications
// cannot read it (the entrypoint starts them with that directory closed to
// them, `agentd app`). With Config.Network the container gets a bridge
// network for the desktop's own traffic; agentd still listens on the
// container's loopback and the unix socket only, and no port is published.
package docker

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/healthz"
	"github.com/agentd-dev/agentd/internal/limitbuf"
	"github.com/agentd-dev/agentd/internal/randhex"
	"github.com/agentd-dev/agentd/internal/statedir"
)

// Defaults for a zero Config.
const (
	DefaultImage        = "agentd-guest"
	DefaultSize         = "1440x900"
	DefaultMemory       = 2 << 30 // Firefox with a few tabs stays well below
	DefaultPIDs         = 1024    // counts threads; Firefox runs a few hundred
	DefaultCPUs         = 2       // or the engine's CPUs when it has fewer
	DefaultOpenFiles    = 8192    // per process; Firefox with a few tabs holds well under 1,000
	DefaultShmSize      = 256 << 20
	DefaultStartTimeout = 2 * time.Minute
	DefaultStopTimeout  = 10 * time.Second // the entrypoint gives each child 2s
)

// LabelGuest marks every container Up creates (value "1"), so leftovers
// can be found with a label filter.
const LabelGuest = "dev.agentd.guest"

// MaxReadFile bounds what ReadFile returns.
const MaxReadFile = 64 << 20

// Inside the container; docker/entrypoint.sh uses the same names.
const (
	runDir     = "/run/agentd"
	tokenName  = "token"
	socketName = "agentd.sock"
	configName = "config"
)

// ErrNoEngine is wrapped by errors that come from not reaching the Docker
// engine at all.
var ErrNoEngine = errors.New("engine unreachable")

// Config describes a guest. The zero value is a 1440×900 desktop with no
// applications and no network, from the image DefaultImage, which must
// exist (or set Build).
type Config struct {
	// Image is the guest image. Default DefaultImage.
	Image string
	// Name is the container's name. Default "agentd-guest-" and 8 random hex digits.
	Name string
	// Size is the screen, "WxH" or "WxHxD" (D is 24 or 16). Default DefaultSize.
	Size string
	// Network gives the container a bridge network (default: none, only its
	// own loopback), for the desktop's traffic: agentd is still reached
	// through the unix socket only. The guest can reach what the bridge
	// reaches, sibling containers on the engine's default bridge and the
	// host's services on the gateway address included (README, "Docker
	// guest").
	Network bool
	// Apps are the applications the entrypoint starts before agentd, in
	// this order: any of "form" (the exercise's pickup form), "firefox",
	// "mousepad" (docker/entrypoint.sh, GUEST_APPS). Default none.
	Apps []string
	// URL is the page Firefox opens. Default about:blank.
	URL string
	// File is the file Mousepad opens (created empty when missing), a path
	// in the container; relative paths are in the user's home.
	File string
	// ConfigDir, if set, is a host directory copied into the guest's state
	// directory and given to the entrypoint as GUEST_CONFIG_DIR: window
	// manager rules, browser profile, editor settings (desktop.WriteConfig).
	ConfigDir string
	// Code starts agentd with --code (AGENTD_CODE=1): Python code
	// execution, with the container's network (none without Network).
	Code bool
	// Browser starts agentd with --browser (AGENTD_BROWSER=1): Chromium for
	// the browser toolset, its sandbox kept under BrowserSeccomp.
	Browser bool
	// Build, if set, builds Image with these options when it is missing
	// (Build.Tag is replaced by Image). Nil: a missing image is an error.
	Build *BuildOptions
	// StateRoot holds the guests' private directories. Default StateRoot().
	StateRoot string
	// Memory (bytes, no swap on top), CPUs (CPU time, in CPUs: 1.5 is one
	// and a half) and PIDs limit the container, OpenFiles each of its
	// processes (nofile). Defaults DefaultMemory, DefaultCPUs (or the
	// engine's CPUs when it has fewer), DefaultPIDs and DefaultOpenFiles.
	Memory    int64
	CPUs      float64
	PIDs      int64
	OpenFiles int64
	// StartTimeout bounds Up from creating the container to agentd
	// answering. Default DefaultStartTimeout.
	StartTimeout time.Duration
}

// Guest is a running guest container. Its fields are read-only.
type Guest struct {
	ID   string // the container's ID
	Name string // the container's name
	// Addr is agentd's address for guest.Dial: "unix:" and the socket's path.
	Addr string
	// TokenFile holds agentd's token (0600, inside StateDir).
	TokenFile string
	// StateDir is the guest's private directory on the host (0700),
	// bind-mounted at /run/agentd; Down removes it.
	StateDir string
	// Width and Height are the screen's size in pixels.
	Width, Height int
	// Home is the container user's home (a tmpfs): where applications save
	// files, for ReadFile.
	Home string

	cli  *client.Client
	user string // uid:gid that execs run as
	// marks are the host's moments of Up (see StartMilestones).
	marks []backend.Milestone

	downOnce sync.Once
	downErr  error
}

// Status is what the engine reports about a guest's container.
type Status struct {
	State     string // created, running, exited, ...
	Running   bool
	Health    string // starting, healthy or unhealthy; empty without a healthcheck
	ExitCode  int    // once it exited
	OOMKilled bool
}

// NewClient connects to the Docker engine named by the environment
// (DOCKER_HOST etc., default the local socket) and checks that it answers;
// an engine that does not answer gives an error wrapping ErrNoEngine.
func NewClient(ctx context.Context) (*client.Client, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("docker: client: %w", err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker: %w: %w", ErrNoEngine, err)
	}
	return cli, nil
}

// StateRoot returns the private directory under which guests keep their
// state directories: $XDG_RUNTIME_DIR/agentd-docker, else
// <tmp>/agentd-docker-<uid> (see statedir).
func StateRoot() (string, error) { return statedir.Root("agentd-docker") }

// knownApps are the applications docker/entrypoint.sh can start.
var knownApps = map[string]bool{"form": true, "firefox": true, "mousepad": true}

var (
	sizeRE = regexp.MustCompile(`^([0-9]{2,5})x([0-9]{2,5})(x(24|16))?$`)
	// The engine's own rule for names; the name also names the state directory.
	nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)
)

func (cfg Config) withDefaults() (Config, error) {
	cfg.Image = cmp.Or(cfg.Image, DefaultImage)
	if cfg.Name == "" {
		cfg.Name = "agentd-guest-" + randhex.String(4)
	}
	if !nameRE.MatchString(cfg.Name) {
		return cfg, fmt.Errorf("docker guest: name %q: want letters, digits and _.- only", cfg.Name)
	}
	cfg.Size = cmp.Or(cfg.Size, DefaultSize)
	m := sizeRE.FindStringSubmatch(cfg.Size)
	if m == nil {
		return cfg, fmt.Errorf("docker guest: size %q: want WxH or WxHxD (D 24 or 16)", cfg.Size)
	}
	for _, side := range m[1:3] {
		if n, _ := strconv.Atoi(side); n < 64 || n > 8192 {
			return cfg, fmt.Errorf("docker guest: size %q out of range (64..8192)", cfg.Size)
		}
	}
	cfg.Memory = cmp.Or(cfg.Memory, DefaultMemory)
	cfg.PIDs = cmp.Or(cfg.PIDs, DefaultPIDs)
	cfg.OpenFiles = cmp.Or(cfg.OpenFiles, DefaultOpenFiles)
	if cfg.CPUs < 0 || cfg.OpenFiles < 0 {
		return cfg, errors.New("docker guest: CPUs and OpenFiles must not be negative")
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	for _, app := range cfg.Apps {
		if !knownApps[app] {
			return cfg, fmt.Errorf("docker guest: unknown application %q (form, firefox, mousepad)", app)
		}
	}
	if strings.ContainsAny(cfg.URL+cfg.File, "\x00\n") {
		return cfg, errors.New("docker guest: URL and File must be one line")
	}
	if cfg.ConfigDir != "" {
		if fi, err := os.Stat(cfg.ConfigDir); err != nil || !fi.IsDir() {
			return cfg, fmt.Errorf("docker guest: ConfigDir %q is not a directory", cfg.ConfigDir)
		}
	}
	return cfg, nil
}

// Up starts a guest and returns once agentd answers /healthz with 200 on
// its unix socket. progress, if not nil, receives one line at a time: the
// image build's output (when Config.Build makes it) and each start step.
// On error, whatever Up created is removed again, and the error carries the
// container's last log lines.
func Up(ctx context.Context, cfg Config, progress func(string)) (*Guest, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if progress == nil {
		progress = func(string) {}
	}
	return withClient(ctx, cfg.Name, func(cli *client.Client) (*Guest, error) {
		return up(ctx, cli, cfg, progress)
	})
}

// withClient makes an engine client for start's Guest, which keeps it; on
// an error the client is closed and the error names the guest.
func withClient(ctx context.Context, name string, start func(*client.Client) (*Guest, error)) (*Guest, error) {
	cli, err := NewClient(ctx)
	if err != nil {
		return nil, err
	}
	g, err := start(cli)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker guest %s: %w", name, err)
	}
	return g, nil
}

func up(ctx context.Context, cli *client.Client, cfg Config, say func(string)) (*Guest, error) {
	begun := time.Now()
	img, err := findImage(ctx, cli, cfg, say)
	if err != nil {
		return nil, err
	}
	user, home, err := imageUser(img)
	if err != nil {
		return nil, err
	}
	if cfg.CPUs == 0 {
		info, err := cli.Info(ctx, client.InfoOptions{})
		if err != nil {
			return nil, fmt.Errorf("ask the engine for its CPUs: %w", err)
		}
		cfg.CPUs = DefaultCPUs
		if n := info.Info.NCPU; n > 0 && float64(n) < cfg.CPUs {
			cfg.CPUs = float64(n)
		}
	}
	// As root, the private directory and token are handed to the image's
	// user; otherwise the container runs as this user, who owns them.
	runAs := user
	if os.Geteuid() != 0 {
		runAs = ids{uid: os.Getuid(), gid: os.Getgid()}
	}

	root := cfg.StateRoot
	if root == "" {
		if root, err = StateRoot(); err != nil {
			return nil, err
		}
	} else if err := statedir.Ensure(root); err != nil {
		return nil, err
	}
	m := sizeRE.FindStringSubmatch(cfg.Size)
	w, _ := strconv.Atoi(m[1])
	h, _ := strconv.Atoi(m[2])
	g := &Guest{
		Name:     cfg.Name,
		StateDir: filepath.Join(root, cfg.Name),
		Width:    w,
		Height:   h,
		Home:     home,
		cli:      cli,
		user:     runAs.String(),
	}
	mark := func(name string) { g.marks = append(g.marks, backend.Milestone{Name: name, At: time.Now()}) }
	g.marks = []backend.Milestone{{Name: "up", At: begun}}
	g.TokenFile = filepath.Join(g.StateDir, tokenName)
	sock := filepath.Join(g.StateDir, socketName)
	// sun_path holds 108 bytes on Linux, 104 on macOS.
	if len(sock) >= 104 {
		return nil, fmt.Errorf("socket path %s is too long for a unix socket: use a shorter StateRoot or Name", sock)
	}
	g.Addr = "unix:" + sock
	if err := os.Mkdir(g.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	fail := func(err error) (*Guest, error) {
		if g.ID != "" {
			if logs, lerr := g.Logs(context.WithoutCancel(ctx), 30); lerr == nil && logs != "" {
				err = fmt.Errorf("%w\n--- last log lines ---\n%s", err, strings.TrimRight(logs, "\n"))
			}
		}
		if derr := g.teardown(context.WithoutCancel(ctx)); derr != nil {
			err = fmt.Errorf("%w (and tearing down: %v)", err, derr)
		}
		return nil, err
	}
	if err := statedir.WriteToken(g.TokenFile); err != nil {
		return fail(err)
	}
	if cfg.ConfigDir != "" {
		if err := os.CopyFS(filepath.Join(g.StateDir, configName), os.DirFS(cfg.ConfigDir)); err != nil {
			return fail(fmt.Errorf("copy the configuration directory: %w", err))
		}
	}
	if os.Geteuid() == 0 {
		// The whole tree: the token, and the configuration the applications
		// copy and the browser writes to.
		err := filepath.WalkDir(g.StateDir, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, runAs.uid, runAs.gid)
		})
		if err != nil {
			return fail(fmt.Errorf("hand the state directory to uid %d: %w", runAs.uid, err))
		}
	}

	create, err := createOptions(cfg, img.ID, runAs, home, g.StateDir)
	if err != nil {
		return fail(err)
	}
	say(fmt.Sprintf("creating container %s from %s", cfg.Name, cfg.Image))
	mark("prepared")
	created, err := cli.ContainerCreate(ctx, create)
	if err != nil {
		return fail(fmt.Errorf("create container: %w", err))
	}
	mark("created")
	g.ID = created.ID
	for _, w := range created.Warnings {
		say("engine warning: " + w)
	}
	if _, err := cli.ContainerStart(ctx, g.ID, client.ContainerStartOptions{}); err != nil {
		return fail(fmt.Errorf("start container: %w", err))
	}
	mark("started")
	say("waiting for agentd")
	if err := g.waitReady(ctx, cfg.StartTimeout); err != nil {
		return fail(err)
	}
	mark("healthy")
	say("guest ready at " + g.Addr)
	return g, nil
}

// Open finds a guest that Up started, possibly in another process, by its
// container name; stateRoot is the Config.StateRoot it was started with
// ("" for the default). The guest it returns serves Status, Logs, ReadFile
// and Down.
func Open(ctx context.Context, name, stateRoot string) (*Guest, error) {
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("docker guest: name %q: want letters, digits and _.- only", name)
	}
	if stateRoot == "" {
		var err error
		if stateRoot, err = StateRoot(); err != nil {
			return nil, err
		}
	}
	return withClient(ctx, name, func(cli *client.Client) (*Guest, error) {
		return open(ctx, cli, name, stateRoot)
	})
}

func open(ctx context.Context, cli *client.Client, name, stateRoot string) (*Guest, error) {
	res, err := cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if isNotFound(err) {
		return nil, fmt.Errorf("no such container: %w", fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	c := res.Container
	if c.Config == nil || c.Config.Labels[LabelGuest] != "1" {
		return nil, fmt.Errorf("container %s was not started by agentd (no %s label)", name, LabelGuest)
	}
	g := &Guest{ID: c.ID, Name: name, StateDir: filepath.Join(stateRoot, name), cli: cli, user: c.Config.User}
	g.TokenFile = filepath.Join(g.StateDir, tokenName)
	g.Addr = "unix:" + filepath.Join(g.StateDir, socketName)
	for _, kv := range c.Config.Env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME":
			g.Home = v
		case "SCREEN_SIZE":
			if m := sizeRE.FindStringSubmatch(v); m != nil {
				g.Width, _ = strconv.Atoi(m[1])
				g.Height, _ = strconv.Atoi(m[2])
			}
		}
	}
	return g, nil
}

// createOptions is the container's whole configuration; every hardening
// setting is here.
func createOptions(cfg Config, imageID string, runAs ids, home, stateDir string) (client.ContainerCreateOptions, error) {
	env := []string{"SCREEN_SIZE=" + cfg.Size, "GUEST_APPS=" + strings.Join(cfg.Apps, " ")}
	if cfg.URL != "" {
		env = append(env, "GUEST_URL="+cfg.URL)
	}
	if cfg.File != "" {
		env = append(env, "GUEST_FILE="+cfg.File)
	}
	if cfg.ConfigDir != "" {
		env = append(env, "GUEST_CONFIG_DIR="+path.Join(runDir, configName))
	}
	if cfg.Code {
		env = append(env, "AGENTD_CODE=1")
	}
	security := []string{"no-new-privileges:true"}
	if cfg.Browser {
		env = append(env, "AGENTD_BROWSER=1")
		profile, err := BrowserSeccomp()
		if err != nil {
			return client.ContainerCreateOptions{}, err
		}
		security = append(security, "seccomp="+string(profile))
	}
	// With a network agentd still listens on the container's loopback (the
	// entrypoint's default) and the unix socket: a port published to the
	// host would need it on the bridge address, where every container on
	// that bridge reaches it.
	netMode := container.NetworkMode("none")
	if cfg.Network {
		netMode = "bridge"
	}
	pids := cfg.PIDs
	initProc := true // reaps the browser's orphaned helpers
	return client.ContainerCreateOptions{
		Name: cfg.Name,
		Config: &container.Config{
			Image:  imageID,
			User:   runAs.String(),
			Env:    env,
			Labels: map[string]string{LabelGuest: "1"},
		},
		HostConfig: &container.HostConfig{
			NetworkMode:    netMode,
			CapDrop:        []string{"ALL"},
			SecurityOpt:    security,
			ReadonlyRootfs: true,
			Tmpfs: map[string]string{
				"/tmp": "rw,nosuid,nodev,noexec,size=512m",
				home:   fmt.Sprintf("rw,nosuid,nodev,noexec,size=1g,mode=0700,uid=%d,gid=%d", runAs.uid, runAs.gid),
			},
			Mounts: []mount.Mount{{
				Type:   mount.TypeBind,
				Source: stateDir,
				Target: runDir,
			}},
			IpcMode: "private",
			ShmSize: DefaultShmSize,
			Init:    &initProc,
			Resources: container.Resources{
				Memory:     cfg.Memory,
				MemorySwap: cfg.Memory,
				NanoCPUs:   int64(cfg.CPUs * 1e9),
				PidsLimit:  &pids,
				Ulimits:    []*container.Ulimit{{Name: "nofile", Soft: cfg.OpenFiles, Hard: cfg.OpenFiles}},
			},
		},
	}, nil
}

// findImage inspects the image, building it first when it is missing and
// Config.Build says how.
func findImage(ctx context.Context, cli *client.Client, cfg Config, say func(string)) (client.ImageInspectResult, error) {
	img, err := cli.ImageInspect(ctx, cfg.Image)
	if err == nil {
		return img, nil
	}
	if !isNotFound(err) {
		return img, fmt.Errorf("inspect image %s: %w", cfg.Image, err)
	}
	if cfg.Build == nil {
		return img, fmt.Errorf("image %s not found: build it (make docker-image) or set Config.Build", cfg.Image)
	}
	opts := *cfg.Build
	opts.Tag = cfg.Image
	say("image " + cfg.Image + " not found: building it")
	if err := build(ctx, cli, opts, say); err != nil {
		return img, err
	}
	img, err = cli.ImageInspect(ctx, cfg.Image)
	if err != nil {
		return img, fmt.Errorf("inspect image %s after building it: %w", cfg.Image, err)
	}
	return img, nil
}

// ids is a numeric user and group.
type ids struct{ uid, gid int }

func (i ids) String() string { return strconv.Itoa(i.uid) + ":" + strconv.Itoa(i.gid) }

// imageUser reads the image's USER (numeric uid:gid, not root) and HOME.
func imageUser(img client.ImageInspectResult) (ids, string, error) {
	if img.Config == nil {
		return ids{}, "", fmt.Errorf("image %s has no configuration", img.ID)
	}
	var u ids
	us, gs, ok := strings.Cut(img.Config.User, ":")
	var err1, err2 error
	u.uid, err1 = strconv.Atoi(us)
	u.gid, err2 = strconv.Atoi(gs)
	if !ok || err1 != nil || err2 != nil || u.uid <= 0 || u.gid <= 0 {
		return ids{}, "", fmt.Errorf("image %s: USER is %q: want a numeric non-root uid:gid", img.ID, img.Config.User)
	}
	for _, kv := range img.Config.Env {
		if home, ok := strings.CutPrefix(kv, "HOME="); ok && path.IsAbs(home) && home != "/" {
			return u, path.Clean(home), nil
		}
	}
	return ids{}, "", fmt.Errorf("image %s sets no HOME", img.ID)
}

func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// Token reads agentd's token from TokenFile.
func (g *Guest) Token() (string, error) {
	b, err := os.ReadFile(g.TokenFile)
	if err != nil {
		return "", fmt.Errorf("docker guest %s: %w", g.Name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Healthz asks agentd itself whether it can capture and send input, over
// its unix socket; the engine's healthcheck says the same, but only every
// few seconds.
func (g *Guest) Healthz(ctx context.Context) error {
	if err := healthz.Probe(ctx, g.Addr); err != nil {
		return fmt.Errorf("agentd %s", healthz.Describe(err))
	}
	return nil
}

// waitReady polls agentd's /healthz over the unix socket until it answers
// 200, failing early when the container stops.
func (g *Guest) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := "agentd's socket has not appeared"
	// A probe is a stat or a unix socket's round trip: polling often costs
	// little, and every tick's wait is part of a cold start.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		err := healthz.Probe(ctx, g.Addr)
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			last = err.Error()
		}
		if i%50 == 0 {
			st, err := g.Status(ctx)
			if err != nil {
				return err
			}
			if !st.Running {
				return fmt.Errorf("container %s (exit code %d) before agentd answered", st.State, st.ExitCode)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("agentd not ready after %v (%s): %w", timeout, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// Status asks the engine about the container.
func (g *Guest) Status(ctx context.Context) (Status, error) {
	res, err := g.cli.ContainerInspect(ctx, g.ID, client.ContainerInspectOptions{})
	if err != nil {
		return Status{}, fmt.Errorf("docker guest %s: inspect: %w", g.Name, err)
	}
	st := res.Container.State
	if st == nil {
		return Status{}, fmt.Errorf("docker guest %s: inspect: no state", g.Name)
	}
	s := Status{State: string(st.Status), Running: st.Running, ExitCode: st.ExitCode, OOMKilled: st.OOMKilled}
	if st.Health != nil {
		s.Health = string(st.Health.Status)
	}
	return s, nil
}

// StartMilestones returns the moments of Up, in time order: the host's
// (up: Up called; prepared: image found, state directory and token made;
// created and started: the engine's calls returned; healthy: agentd
// answered /healthz) and the entrypoint's, read from the container's log
// (begin: it runs; xvfb, openbox: the display and the window manager
// answer; form, mousepad, firefox: each application is ready;
// agentd-started: agentd was started). A guest from Open has none of the
// host's.
func (g *Guest) StartMilestones(ctx context.Context) ([]backend.Milestone, error) {
	logs, err := g.Logs(ctx, 0)
	if err != nil {
		return nil, err
	}
	ms, err := backend.ImageMilestones(g.marks, logs)
	if err != nil {
		return nil, fmt.Errorf("docker guest %s: %w", g.Name, err)
	}
	return ms, nil
}

// Logs returns the container's last n lines of output (stdout and stderr
// interleaved; n ≤ 0: all of it).
func (g *Guest) Logs(ctx context.Context, n int) (string, error) {
	tail := "all"
	if n > 0 {
		tail = strconv.Itoa(n)
	}
	rc, err := g.cli.ContainerLogs(ctx, g.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: tail})
	if err != nil {
		return "", fmt.Errorf("docker guest %s: logs: %w", g.Name, err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := stdcopy.StdCopy(&buf, &buf, rc); err != nil {
		return buf.String(), fmt.Errorf("docker guest %s: logs: %w", g.Name, err)
	}
	return buf.String(), nil
}

// ReadFile returns a file of the running guest (an absolute path inside the
// container, e.g. a file the exercise saved in the user's home), read by
// the container's user through docker exec: agentd itself offers no file
// access (docs/design.md, "Safety"). A missing file gives an error wrapping fs.ErrNotExist.
func (g *Guest) ReadFile(ctx context.Context, file string) ([]byte, error) {
	if !path.IsAbs(file) {
		return nil, fmt.Errorf("docker guest %s: read %q: want an absolute path", g.Name, file)
	}
	ex, err := g.cli.ExecCreate(ctx, g.ID, client.ExecCreateOptions{
		User:         g.user,
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          []string{"cat", "--", file},
	})
	if err != nil {
		return nil, fmt.Errorf("docker guest %s: read %s: %w", g.Name, file, err)
	}
	att, err := g.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("docker guest %s: read %s: %w", g.Name, file, err)
	}
	stop := context.AfterFunc(ctx, att.Close)
	defer stop()
	defer att.Close()
	out := &limitbuf.Buffer{Max: MaxReadFile}
	var errOut bytes.Buffer
	_, copyErr := stdcopy.StdCopy(out, &errOut, att.Reader)
	if copyErr != nil {
		if ctx.Err() != nil {
			copyErr = ctx.Err()
		}
		return nil, fmt.Errorf("docker guest %s: read %s: %w", g.Name, file, copyErr)
	}
	res, err := g.cli.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("docker guest %s: read %s: %w", g.Name, file, err)
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(errOut.String())
		if strings.Contains(msg, "No such file or directory") {
			return nil, fmt.Errorf("docker guest %s: read %s: %w", g.Name, file, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("docker guest %s: read %s: cat exited %d: %s", g.Name, file, res.ExitCode, msg)
	}
	return out.Bytes(), nil
}

// Close releases the connection to the engine; the container keeps
// running (Open finds it again).
func (g *Guest) Close() error { return g.cli.Close() }

// Down stops and removes the container and removes the state directory
// (token and socket with it). It is safe to call more than once; later
// calls return the first call's result.
func (g *Guest) Down(ctx context.Context) error {
	g.downOnce.Do(func() {
		g.downErr = g.teardown(ctx)
		if err := g.cli.Close(); err != nil && g.downErr == nil {
			g.downErr = fmt.Errorf("docker guest %s: close client: %w", g.Name, err)
		}
	})
	return g.downErr
}

func (g *Guest) teardown(ctx context.Context) error {
	var errs []error
	if g.ID != "" {
		// Stop first, so the entrypoint ends its children in order; the
		// removal then kills whatever is left.
		timeout := int(DefaultStopTimeout / time.Second)
		if _, err := g.cli.ContainerStop(ctx, g.ID, client.ContainerStopOptions{Timeout: &timeout}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("stop: %w", err))
		}
		if _, err := g.cli.ContainerRemove(ctx, g.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove: %w", err))
		}
	}
	if err := os.RemoveAll(g.StateDir); err != nil {
		errs = append(errs, fmt.Errorf("remove state directory: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("docker guest %s: down: %w", g.Name, err)
	}
	return nil
}
