package vm

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/statedir"
)

// TestLimaContract runs the same limactl command sequences, and the
// package's Up, Status and Down on top of them, against the fake limactl
// the other tests use and against Lima's own, for everything that needs no
// running VM: --version, validate, create from a local image, list and
// delete of present and absent instances, a failed create, a broken
// LIMA_HOME. Where the two differ, the fake is wrong.
//
// The real limactl is the one in $AGENTD_LIMA_DIR/bin, else in the first
// shared/tools/lima found walking up from this directory. The images are
// made with qemu-img. Without either the test skips, unless
// AGENTD_REQUIRE_LIMA is set: then it fails.
func TestLimaContract(t *testing.T) {
	t.Run("fake", func(t *testing.T) {
		f := newFake(t, http.StatusOK)
		lima, err := findLimactl("limactl", nil)
		if err != nil {
			t.Fatal(err)
		}
		limaContract(t, lima, f.config(t))
	})
	t.Run("real", func(t *testing.T) {
		limaContract(t, realLimactl(t), testConfig(t, filepath.Join(t.TempDir(), "state"), 0))
	})
}

// missingLima skips, or under AGENTD_REQUIRE_LIMA fails, for a missing
// prerequisite of the contract test.
func missingLima(t *testing.T, format string, args ...any) {
	t.Helper()
	prereq.Missing(t, prereq.Lima, format, args...)
}

// limaToolsDir is $AGENTD_LIMA_DIR, else the first shared/tools/lima in
// this directory or one above it.
func limaToolsDir() (string, error) {
	if d := os.Getenv("AGENTD_LIMA_DIR"); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		c := filepath.Join(d, "shared", "tools", "lima")
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			return c, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no shared/tools/lima above " + wd + " and AGENTD_LIMA_DIR is not set")
		}
	}
}

// realLimactl is Lima's limactl behind a script that gives it a private
// HOME (so ~/.lima is the test's). Lima refuses to run as root: then the
// script runs it as nobody, allowed to read (not write) the test's files.
func realLimactl(t *testing.T) limactl {
	t.Helper()
	tools, err := limaToolsDir()
	if err != nil {
		missingLima(t, "requires Lima's limactl: %v", err)
	}
	bin := filepath.Join(tools, "bin", "limactl")
	if _, err := os.Stat(bin); err != nil {
		missingLima(t, "requires Lima's limactl: %v", err)
	}
	home := t.TempDir()
	run := ""
	if os.Geteuid() == 0 {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			missingLima(t, "requires setpriv (util-linux) to run limactl as nobody: %v", err)
		}
		u, err := user.Lookup("nobody")
		if err != nil {
			missingLima(t, "requires the user nobody to run limactl as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(home, uid, gid); err != nil {
			t.Fatal(err)
		}
		run = shellQuote(setpriv) + " --reuid=" + u.Uid + " --regid=" + u.Gid + " --clear-groups" +
			" --inh-caps=+dac_read_search --ambient-caps=+dac_read_search "
	}
	script := filepath.Join(t.TempDir(), "limactl")
	body := "#!/bin/sh\nexec " + run + "env HOME=" + shellQuote(home) + " " + shellQuote(bin) + " \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	lima, err := findLimactl(script, nil)
	if err != nil {
		t.Fatal(err)
	}
	return lima
}

// qcow2 makes a small empty disk image: enough for limactl create.
func qcow2(t *testing.T, file string) {
	t.Helper()
	qemuImg, err := exec.LookPath("qemu-img")
	if err != nil {
		missingLima(t, "requires qemu-img (Debian: qemu-utils; make cross-deps): %v", err)
	}
	if out, err := exec.Command(qemuImg, "create", "-f", "qcow2", file, "16M").CombinedOutput(); err != nil {
		t.Fatalf("qemu-img: %v\n%s", err, out)
	}
}

// wantExit checks that err is limactl exiting with code, saying each of msgs.
func wantExit(t *testing.T, what string, err error, code int, msgs ...string) {
	t.Helper()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != code {
		t.Fatalf("%s: %v, want exit status %d", what, err, code)
	}
	for _, m := range msgs {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("%s: the error lacks %q:\n%v", what, m, err)
		}
	}
}

// wantInstance checks what list says of cfg.Name: status "" means absent.
func wantInstance(t *testing.T, lima limactl, name, status string) instance {
	t.Helper()
	in, err := lima.list(context.Background(), name)
	if err != nil {
		t.Fatalf("list %s: %v", name, err)
	}
	if in.Status != status || (status == "") != (in.Name == "") {
		t.Fatalf("list %s: %+v, want status %q", name, in, status)
	}
	if status != "" {
		if fi, err := os.Stat(in.Dir); in.Name != name || err != nil || !fi.IsDir() {
			t.Fatalf("list %s: %+v (dir: %v)", name, in, err)
		}
	}
	return in
}

func limaContract(t *testing.T, lima limactl, cfg Config) {
	ctx := ctxT(t)
	dir := t.TempDir()
	cfg.Name, cfg.Limactl, cfg.VMType, cfg.Arch = "agentd-contract", lima.path, "qemu", hostArch()
	name := cfg.Name
	image := filepath.Join(dir, "disk.qcow2")
	qcow2(t, image)
	template := func(file, image string) string {
		t.Helper()
		c := cfg
		c.Image = image
		c, err := c.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		b, err := renderTemplate(c, 41234)
		if err != nil {
			t.Fatal(err)
		}
		file = filepath.Join(dir, file)
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}

	// The version, as Up reads it: no note that it could not be read.
	var notes []string
	l := lima
	l.say = func(s string) { notes = append(notes, s) }
	if err := l.checkVersion(ctx); err != nil || len(notes) != 0 {
		t.Fatalf("checkVersion: %v %q", err, notes)
	}

	// Every template the package renders passes Lima's validation; one
	// Lima cannot run fails it.
	for _, vmType := range []string{"vz", "qemu"} {
		for _, arch := range []string{"aarch64", "x86_64"} {
			c, err := Config{VMType: vmType, Arch: arch}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			b, err := renderTemplate(c, 41234)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, vmType+"-"+arch+".yaml")
			if err := os.WriteFile(file, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := lima.output(ctx, nil, "validate", file); err != nil {
				t.Errorf("the %s/%s template: %v", vmType, arch, err)
			}
			if vmType != "qemu" || arch != "x86_64" {
				continue
			}
			bad := filepath.Join(dir, "bad.yaml")
			if err := os.WriteFile(bad, bytes.Replace(b, []byte("vmType: qemu"), []byte("vmType: nosuch"), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = lima.output(ctx, nil, "validate", bad)
			wantExit(t, "validate of an unknown vmType", err, 1, "vmType `nosuch` is not a registered driver")
		}
	}

	// No such instance: exit 1, saying so; the package hears "not there".
	_, err := lima.output(ctx, nil, "list", "--json", name)
	wantExit(t, "list of a missing instance", err, 1, noInstanceMsg(name), "unmatched instances")
	wantInstance(t, lima, name, "")

	// Created from a local image (never a URL: the test has no network).
	good := template("good.yaml", image)
	if err := lima.stream(ctx, "create", "--tty=false", "--name="+name, good); err != nil {
		t.Fatalf("create: %v", err)
	}
	in := wantInstance(t, lima, name, "Stopped")
	err = lima.stream(ctx, "create", "--tty=false", "--name="+name, good)
	wantExit(t, "create of a taken name", err, 1, existsMsg(name))
	wantInstance(t, lima, name, "Stopped")

	// Up leaves an instance it did not make alone.
	if _, err := Up(ctx, cfg, nil); err == nil || !strings.Contains(err.Error(), "not made by this guest") {
		t.Fatalf("Up over a foreign instance: %v", err)
	}
	wantInstance(t, lima, name, "Stopped")
	if _, err := os.Stat(filepath.Join(cfg.StateRoot, name)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Up left state behind: %v", err)
	}

	// A guest of that instance, as Up leaves it on the host.
	gdir := filepath.Join(cfg.StateRoot, name)
	if err := statedir.Ensure(gdir); err != nil {
		t.Fatal(err)
	}
	if err := statedir.WriteToken(filepath.Join(gdir, tokenName)); err != nil {
		t.Fatal(err)
	}
	if err := writeState(gdir, state{Name: name, Addr: "127.0.0.1:1", TokenFile: filepath.Join(gdir, tokenName), Limactl: lima.path, Size: "1280x800"}); err != nil {
		t.Fatal(err)
	}
	g, err := Open(Config{Name: name, StateRoot: cfg.StateRoot})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if st, err := g.Status(ctx); err != nil || st != (Status{State: "Stopped", Dir: in.Dir}) {
		t.Fatalf("Status: %+v, %v", st, err)
	}

	// Any other failure of list is an error, with Lima's message: Status
	// and Down say it, and Down keeps the state.
	notDir := filepath.Join(dir, "not-a-directory")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LIMA_HOME", notDir)
	_, err = g.Status(ctx)
	wantExit(t, "Status with a broken LIMA_HOME", err, 1, "limactl list --json "+name, "open "+notDir+": not a directory")
	broken, err := Open(Config{Name: name, StateRoot: cfg.StateRoot})
	if err != nil {
		t.Fatal(err)
	}
	err = broken.Down(ctx)
	wantExit(t, "Down with a broken LIMA_HOME", err, 1, "open "+notDir+": not a directory")
	if _, err := os.Stat(filepath.Join(gdir, stateJSON)); err != nil {
		t.Fatalf("Down that failed removed the state: %v", err)
	}
	os.Unsetenv("LIMA_HOME")

	// Deleted behind the guest's back (delete --force of a present and of
	// an absent instance both succeed): Status says it is not there, Down
	// removes the host-side state and succeeds.
	for range 2 {
		if _, err := lima.output(ctx, nil, "delete", "--force", name); err != nil {
			t.Fatalf("delete --force: %v", err)
		}
		wantInstance(t, lima, name, "")
	}
	if st, err := g.Status(ctx); err != nil || st != (Status{}) {
		t.Fatalf("Status of a deleted VM: %+v, %v", st, err)
	}
	if err := g.Down(ctx); err != nil {
		t.Fatalf("Down of a deleted VM: %v", err)
	}
	if _, err := os.Stat(gdir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Down of a deleted VM left its state: %v", err)
	}

	// A create that fails leaves its instance behind; Up deletes the one
	// it made.
	missing := filepath.Join(dir, "missing.qcow2")
	err = lima.stream(ctx, "create", "--tty=false", "--name="+name, template("missing.yaml", missing))
	wantExit(t, "create from a missing image", err, 1, "failed to download `"+missing+"`")
	wantInstance(t, lima, name, "Stopped")
	if _, err := lima.output(ctx, nil, "delete", "--force", name); err != nil {
		t.Fatalf("delete --force: %v", err)
	}
	cfg.Image = missing
	if _, err := Up(ctx, cfg, nil); err == nil || !strings.Contains(err.Error(), "failed to download `"+missing+"`") {
		t.Fatalf("Up from a missing image: %v", err)
	}
	wantInstance(t, lima, name, "")
	if _, err := os.Stat(gdir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a failed Up left its state: %v", err)
	}
}

// TestVersionOfRealLima: the version string of a Lima built from source.
func TestVersionOfRealLima(t *testing.T) {
	m := versionRE.FindStringSubmatch("limactl version 2.2.0-153-g183a60d7.m\n")
	if m == nil || m[1] != "2" || m[2] != "2" {
		t.Fatalf("versionRE: %q", m)
	}
}
