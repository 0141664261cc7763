package vm

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/internal/randhex"
)

// Defaults for a zero Config.
const (
	DefaultSize = "1440x900"
	// DefaultStartTimeout bounds the whole of Up: the first start downloads
	// the cloud image, and provisioning installs the desktop.
	DefaultStartTimeout = 20 * time.Minute
	DefaultCPUs         = 2
	DefaultMemory       = "4GiB"
	DefaultDisk         = "20GiB"
)

// Inside the guest; vm/guest's scripts and docker/entrypoint.sh use the same.
const (
	guestUser  = "agent"
	guestPort  = 7010 // agentd's port on the guest's 127.0.0.1
	configDir  = "/etc/agentd/config"
	stageInVM  = "/tmp/agentd-setup"
	unitName   = "agentd-desktop.service"
	display    = ":99"
	guestHome  = "/home/" + guestUser
	maxNameLen = 32
)

// Config describes a VM guest. The zero value is a 1440×900 desktop with no
// applications in a Debian 12 VM for the host's architecture, with agentd
// taken from ./bin/agentd-linux-<arch> (make agentd-linux-arm64).
type Config struct {
	// Name is the Lima instance's name. Default "agentd-" and 8 random hex digits.
	Name string
	// Size is the screen, "WxH" or "WxHxD" (D is 24 or 16). Default DefaultSize.
	Size string
	// Apps are the applications the entrypoint starts before agentd, in
	// this order: any of "form" (the exercise's pickup form), "firefox",
	// "mousepad" (docker/entrypoint.sh, GUEST_APPS). Default none.
	Apps []string
	// URL is the page Firefox opens (GUEST_URL). Default about:blank.
	URL string
	// File is the file Mousepad opens, created empty when missing
	// (GUEST_FILE); relative paths are in the desktop user's home.
	File string
	// ConfigDir, if set, is a host directory whose regular files are copied
	// to /etc/agentd/config in the guest, readable by the desktop user; the
	// entrypoint finds them through GUEST_CONFIG_DIR.
	ConfigDir string
	// Code starts agentd with --code (AGENTD_CODE=1): Python code
	// execution inside the VM.
	Code bool
	// Env holds more KEY=VALUE variables for the entrypoint (GUEST_FILE,
	// ...). The variables the fields above set cannot be overridden here.
	Env []string

	// Repo is the agentd source tree whose docker/provision.sh,
	// docker/entrypoint.sh and docker/healthcheck.sh the guest runs.
	// Default: the current directory.
	Repo string
	// Agentd is agentd built for the guest's architecture. Default
	// Repo/bin/agentd-linux-<arm64|amd64>.
	Agentd string
	// PickupForm is the exercise's form server (exercise/cmd/pickup-form)
	// built for the guest's architecture, copied in when Apps has "form".
	// Default Repo/bin/pickup-form-linux-<arm64|amd64>.
	PickupForm string

	// Limactl is the limactl program. Default: limactl on $PATH.
	Limactl string
	// VMType is Lima's vmType. Default vz on macOS, qemu elsewhere.
	VMType string
	// Arch is the guest's architecture, aarch64 or x86_64. Default: the host's.
	Arch string
	// Image is the disk image's location. Default: Debian 12's generic
	// cloud image for Arch.
	Image string
	// CPUs, Memory and Disk size the VM. Defaults DefaultCPUs,
	// DefaultMemory, DefaultDisk.
	CPUs   int
	Memory string
	Disk   string
	// HostPort is the port on the host's 127.0.0.1 that Lima forwards to
	// agentd. 0: a free port chosen by Up.
	HostPort int

	// StateRoot holds the guests' private directories on the host. Default StateRoot().
	StateRoot string
	// StartTimeout bounds Up from creating the VM to agentd answering.
	// Default DefaultStartTimeout.
	StartTimeout time.Duration
}

var (
	sizeRE = regexp.MustCompile(`^([0-9]{2,5})x([0-9]{2,5})(x(24|16))?$`)
	// Lima's rule for instance names, shorter: the name also names the
	// host's state directory and Lima's sockets.
	nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)
	appRE  = regexp.MustCompile(`^[a-z0-9_-]+$`)
	keyRE  = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
	sizeQ  = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?[KMGT]iB$`)
)

// reserved are the variables Up itself sets for the entrypoint.
var reserved = []string{"DISPLAY", "SCREEN_SIZE", "GUEST_APPS", "GUEST_URL", "GUEST_FILE", "GUEST_CONFIG_DIR",
	"AGENTD_LISTEN", "AGENTD_CODE", "HOME", "XAUTHORITY", "LANG"}

// images are Debian 12's generic cloud images, by Lima architecture.
var images = map[string]string{
	"aarch64": "https://cloud.debian.org/images/cloud/bookworm/latest/debian-12-genericcloud-arm64.qcow2",
	"x86_64":  "https://cloud.debian.org/images/cloud/bookworm/latest/debian-12-genericcloud-amd64.qcow2",
}

// goarch maps Lima's architecture names to Go's.
var goarch = map[string]string{"aarch64": "arm64", "x86_64": "amd64"}

// hostArch is the host's architecture in Lima's names ("" if Lima has none).
func hostArch() string {
	for lima, g := range goarch {
		if g == runtime.GOARCH {
			return lima
		}
	}
	return ""
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.Name == "" {
		cfg.Name = "agentd-" + randhex.String(4)
	}
	if !nameRE.MatchString(cfg.Name) || len(cfg.Name) > maxNameLen {
		return cfg, fmt.Errorf("vm guest: name %q: want up to %d letters, digits and _.-, starting with a letter or digit", cfg.Name, maxNameLen)
	}
	fail := func(format string, args ...any) (Config, error) {
		return cfg, fmt.Errorf("vm guest %s: "+format, append([]any{cfg.Name}, args...)...)
	}
	if cfg.Size == "" {
		cfg.Size = DefaultSize
	}
	m := sizeRE.FindStringSubmatch(cfg.Size)
	if m == nil {
		return fail("size %q: want WxH or WxHxD (D 24 or 16)", cfg.Size)
	}
	for _, side := range m[1:3] {
		if n, _ := strconv.Atoi(side); n < 64 || n > 8192 {
			return fail("size %q out of range (64..8192)", cfg.Size)
		}
	}
	for _, app := range cfg.Apps {
		if !appRE.MatchString(app) {
			return fail("application %q: want a name like firefox (docker/entrypoint.sh lists them)", app)
		}
	}
	for _, kv := range cfg.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !keyRE.MatchString(k) {
			return fail("environment %q: want KEY=VALUE, KEY in upper case", kv)
		}
		if slices.Contains(reserved, k) {
			return fail("environment: %s is set by the guest's configuration, not through Env", k)
		}
	}
	if cfg.Repo == "" {
		cfg.Repo = "."
	}
	if cfg.Arch == "" {
		if cfg.Arch = hostArch(); cfg.Arch == "" {
			return fail("no Lima architecture for this host (%s): set Config.Arch", runtime.GOARCH)
		}
	}
	if _, ok := goarch[cfg.Arch]; !ok {
		return fail("arch %q: want aarch64 or x86_64", cfg.Arch)
	}
	if cfg.Agentd == "" {
		cfg.Agentd = filepath.Join(cfg.Repo, "bin", "agentd-linux-"+goarch[cfg.Arch])
	}
	if cfg.PickupForm == "" {
		cfg.PickupForm = filepath.Join(cfg.Repo, "bin", "pickup-form-linux-"+goarch[cfg.Arch])
	}
	if cfg.VMType == "" {
		cfg.VMType = "qemu"
		if runtime.GOOS == "darwin" {
			cfg.VMType = "vz"
		}
	}
	if cfg.VMType != "vz" && cfg.VMType != "qemu" {
		return fail("vmType %q: want vz or qemu", cfg.VMType)
	}
	if cfg.Image == "" {
		cfg.Image = images[cfg.Arch]
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = DefaultCPUs
	}
	if cfg.Memory == "" {
		cfg.Memory = DefaultMemory
	}
	if cfg.Disk == "" {
		cfg.Disk = DefaultDisk
	}
	if cfg.CPUs < 1 || !sizeQ.MatchString(cfg.Memory) || !sizeQ.MatchString(cfg.Disk) {
		return fail("cpus %d, memory %q, disk %q: want cpus ≥ 1 and sizes like 4GiB", cfg.CPUs, cfg.Memory, cfg.Disk)
	}
	if cfg.HostPort < 0 || cfg.HostPort > 65535 {
		return fail("host port %d out of range", cfg.HostPort)
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	return cfg, nil
}

// guestUID is the desktop user's uid in the guest. Lima gives its own user
// the host user's uid, so the desktop user (1000, as in the Docker image)
// moves aside when that is taken.
func guestUID() int {
	if os.Getuid() == 1000 {
		return 1001
	}
	return 1000
}
