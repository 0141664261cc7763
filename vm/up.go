package vm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/internal/statedir"
)

// Up creates and starts a VM guest and returns once agentd answers
// /healthz with 200 through Lima's forward on the host's 127.0.0.1.
// progress, if not nil, receives one line at a time: each step, and the
// output of limactl and of the guest's provisioning. On error, the VM and
// the host-side state are removed again; a start that fails or times out
// carries the last lines of Lima's log.
func Up(ctx context.Context, cfg Config, progress func(string)) (*Guest, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if progress == nil {
		progress = func(string) {}
	}
	if err := checkHost(ctx, cfg.VMType); err != nil {
		return nil, fmt.Errorf("vm guest %s: %w", cfg.Name, err)
	}
	lima, err := findLimactl(cfg.Limactl, progress)
	if err != nil {
		return nil, fmt.Errorf("vm guest %s: %w", cfg.Name, err)
	}
	g, err := up(ctx, lima, cfg, progress)
	if err != nil {
		return nil, fmt.Errorf("vm guest %s: %w", cfg.Name, err)
	}
	return g, nil
}

func up(ctx context.Context, lima limactl, cfg Config, say func(string)) (*Guest, error) {
	outer := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	root, err := stateRoot(cfg)
	if err != nil {
		return nil, err
	}
	g := newGuest(lima, cfg.Name, filepath.Join(root, cfg.Name), cfg.Size)
	if err := os.Mkdir(g.StateDir, 0o700); errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("a guest of this name exists already (%s): take it down first", g.StateDir)
	} else if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	created := false
	fail := func(err error) (*Guest, error) {
		bg := context.WithoutCancel(outer)
		if ctx.Err() != nil && outer.Err() == nil {
			err = fmt.Errorf("not ready within %v: %w", cfg.StartTimeout, err)
		}
		if created {
			err = g.withLimaLog(bg, err)
			if _, derr := lima.output(bg, nil, "delete", "--force", cfg.Name); derr != nil {
				err = fmt.Errorf("%w\n(and deleting the VM: %v)", err, derr)
			}
		}
		if rerr := os.RemoveAll(g.StateDir); rerr != nil {
			err = fmt.Errorf("%w (and removing the state directory: %v)", err, rerr)
		}
		return nil, err
	}

	port := cfg.HostPort
	if port == 0 {
		if port, err = freePort(); err != nil {
			return fail(err)
		}
	}
	g.Addr = "127.0.0.1:" + strconv.Itoa(port)
	stageDir := filepath.Join(g.StateDir, stageName)
	if err := stage(cfg, stageDir); err != nil {
		return fail(err)
	}
	if err := statedir.WriteToken(g.TokenFile); err != nil {
		return fail(err)
	}
	yaml, err := renderTemplate(cfg, port)
	if err != nil {
		return fail(err)
	}
	yamlPath := filepath.Join(g.StateDir, limaYAML)
	if err := os.WriteFile(yamlPath, yaml, 0o600); err != nil {
		return fail(fmt.Errorf("write the Lima template: %w", err))
	}
	if err := lima.checkVersion(ctx); err != nil {
		return fail(err)
	}
	// An instance of this name that this Up did not make is someone
	// else's: neither used nor deleted.
	in, err := lima.list(ctx, cfg.Name)
	if err != nil {
		return fail(err)
	}
	if in.Name != "" {
		return fail(fmt.Errorf("an instance of this name, not made by this guest, is in Lima already (%s): delete it (limactl delete %s) or choose another name", in.Dir, cfg.Name))
	}

	say(fmt.Sprintf("creating VM %s (%s, %s)", cfg.Name, cfg.VMType, cfg.Arch))
	// A create that fails half-way leaves its instance behind: it is this
	// Up's to delete, unless create found the name taken after all.
	created = true
	if err := lima.stream(ctx, "create", "--tty=false", "--name="+cfg.Name, yamlPath); err != nil {
		created = !strings.Contains(err.Error(), existsMsg(cfg.Name))
		return fail(err)
	}
	say("starting VM (the first start downloads Debian's cloud image)")
	if err := lima.stream(ctx, "start", "--tty=false", "--timeout="+cfg.StartTimeout.String(), cfg.Name); err != nil {
		return fail(err)
	}
	say("copying the provisioning scripts and agentd into the VM")
	if err := lima.stream(ctx, "copy", "--recursive", stageDir, cfg.Name+":"+stageInVM); err != nil {
		return fail(err)
	}
	if err := os.RemoveAll(stageDir); err != nil {
		return fail(fmt.Errorf("remove the staged files: %w", err))
	}
	say("provisioning the desktop (docker/provision.sh runtime)")
	if err := lima.stream(ctx, g.shell(setupCommand()...)...); err != nil {
		return fail(err)
	}
	say("delivering the token")
	tok, err := os.Open(g.TokenFile)
	if err != nil {
		return fail(fmt.Errorf("token file: %w", err))
	}
	_, err = lima.output(ctx, tok, g.shell(tokenCommand()...)...)
	tok.Close()
	if err != nil {
		return fail(err)
	}
	say("starting the desktop (" + unitName + ")")
	if err := lima.stream(ctx, g.shell(startCommand()...)...); err != nil {
		return fail(err)
	}
	say("waiting for agentd to be healthy in the VM")
	if err := lima.stream(ctx, g.shell(waitCommand(cfg.StartTimeout)...)...); err != nil {
		return fail(err)
	}
	say("waiting for agentd through the forward at " + g.Addr)
	if err := g.waitForward(ctx); err != nil {
		return fail(err)
	}
	if err := writeState(g.StateDir, state{
		Name: g.Name, Addr: g.Addr, TokenFile: g.TokenFile, Limactl: lima.path,
		Arch: cfg.Arch, VMType: cfg.VMType, Size: cfg.Size, Apps: cfg.Apps,
	}); err != nil {
		return fail(err)
	}
	say("guest ready at " + g.Addr)
	return g, nil
}

// The commands Up runs in the guest, in this order, once the stage is
// copied to stageInVM: as Lima's user, who may sudo.

// setupCommand provisions the guest and installs the desktop (vm/guest/setup.sh).
func setupCommand() []string {
	return []string{"sudo", "env", "GUEST_UID=" + strconv.Itoa(guestUID()), "bash", stageInVM + "/setup.sh", stageInVM}
}

// tokenCommand writes the token, read from standard input, into a file of
// the desktop user's (0600).
func tokenCommand() []string {
	return []string{"sudo", "install", "-m", "0600", "-o", guestUser, "-g", guestUser, "/dev/stdin", "/var/lib/agentd/token"}
}

// startCommand starts the desktop, now and at every boot.
func startCommand() []string {
	return []string{"sudo", "systemctl", "enable", "--now", unitName}
}

// waitCommand waits until agentd passes the healthcheck inside the guest.
func waitCommand(timeout time.Duration) []string {
	return []string{"sudo", "/opt/agentd/wait-ready.sh", strconv.Itoa(int(timeout.Seconds()))}
}

// shell is limactl's arguments to run cmd in the guest as Lima's user (who
// may sudo). --workdir: the host's working directory does not exist in a
// guest without mounts.
func (g *Guest) shell(cmd ...string) []string {
	return append([]string{"shell", "--workdir=/", g.Name}, cmd...)
}

// limaLogLines is how much of Lima's log an error carries.
const limaLogLines = 20

// withLimaLog adds the last lines of Lima's host agent log to err.
func (g *Guest) withLimaLog(ctx context.Context, err error) error {
	st, lerr := g.lima.list(ctx, g.Name)
	if lerr != nil || st.Dir == "" {
		return err
	}
	file := filepath.Join(st.Dir, "ha.stderr.log")
	b, rerr := os.ReadFile(file)
	if rerr != nil || len(b) == 0 {
		return err
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	lines = lines[max(0, len(lines)-limaLogLines):]
	return fmt.Errorf("%w\n--- last lines of Lima's log (%s) ---\n%s", err, file, strings.Join(lines, "\n"))
}
