package vm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The fake limactl is this test binary, run through a symlink named
// limactl (TestMain dispatches on the name). It records every invocation
// (arguments and standard input) in $FAKE_LIMA_DIR/calls.jsonl and keeps
// instances as directories under $FAKE_LIMA_DIR/instances: the guest's
// files live in <instance>/fs, and start writes a Lima-like host agent log.
// Where the tests need no running VM, it behaves as Lima's own limactl does
// (TestLimaContract checks it against the real one): its messages, in
// Lima's log format, and exit statuses for a missing instance, a taken
// name, a local image that is not there, a LIMA_HOME that is not a
// directory. It simulates:
//   FAKE_LIMA_FAIL=S      a call whose arguments contain S fails (exit 1),
//                         saying $FAKE_LIMA_FAIL_MSG
//   FAKE_LIMA_HANG=S      a call whose arguments contain S never ends
//   FAKE_LIMA_VERSION=V   limactl --version prints V

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "limactl" {
		os.Exit(fakeLimactl(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// call is one recorded invocation.
type call struct {
	Args  []string `json:"args"`
	Stdin string   `json:"stdin,omitempty"`
}

// haLog is what the fake's start writes to the instance's ha.stderr.log.
var haLog = []string{
	`{"level":"info","msg":"Starting the instance with the vz driver","time":"2026-01-01T00:00:00Z"}`,
	`{"level":"info","msg":"[hostagent] Waiting for the essential requirement 1 of 2: \"ssh\"","time":"2026-01-01T00:00:01Z"}`,
	`{"level":"info","msg":"[hostagent] Waiting for the essential requirement 2 of 2: \"user session is ready for ssh\"","time":"2026-01-01T00:00:02Z"}`,
}

func fakeLimactl(args []string) int {
	dir := os.Getenv("FAKE_LIMA_DIR")
	if dir == "" {
		fmt.Fprintln(os.Stderr, "fake limactl: FAKE_LIMA_DIR is not set")
		return 2
	}
	var stdin []byte
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice == 0 {
		stdin, _ = io.ReadAll(os.Stdin)
	}
	rec, _ := json.Marshal(call{Args: args, Stdin: string(stdin)})
	f, err := os.OpenFile(filepath.Join(dir, "calls.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake limactl:", err)
		return 2
	}
	fmt.Fprintf(f, "%s\n", rec)
	f.Close()

	joined := strings.Join(args, " ")
	if len(args) > 0 && args[0] == "start" {
		// The log is there whatever happens next, as Lima's is.
		name := args[len(args)-1]
		_ = os.WriteFile(filepath.Join(dir, "instances", name, "ha.stderr.log"), []byte(strings.Join(haLog, "\n")+"\n"), 0o600)
	}
	if s := os.Getenv("FAKE_LIMA_HANG"); s != "" && strings.Contains(joined, s) {
		time.Sleep(time.Hour)
	}
	if s := os.Getenv("FAKE_LIMA_FAIL"); s != "" && strings.Contains(joined, s) {
		msg := os.Getenv("FAKE_LIMA_FAIL_MSG")
		if msg == "" {
			msg = fmt.Sprintf("fake failure of %q", s)
		}
		fmt.Fprintf(os.Stderr, "fake output before the failure\n%s\n", limaLine("fatal", msg))
		return 1
	}
	if err := fakeRun(dir, args, stdin); err != nil {
		fmt.Fprintln(os.Stderr, limaLine("fatal", err.Error()))
		return 1
	}
	return 0
}

// limaLine is a line of limactl's log as it writes it when its standard
// error is not a terminal.
func limaLine(level, msg string) string {
	return fmt.Sprintf("time=%q level=%s msg=%q", "2026-01-01T00:00:00Z", level, msg)
}

// fakeTemplate is the part of a Lima template the fake checks.
type fakeTemplate struct {
	VMType string `yaml:"vmType"`
	Arch   string `yaml:"arch"`
	Images []struct {
		Location string `yaml:"location"`
	} `yaml:"images"`
}

// readTemplate reads and checks a template as limactl validate and create do.
func readTemplate(file string) (fakeTemplate, error) {
	var t fakeTemplate
	b, err := os.ReadFile(file)
	if err != nil {
		return t, err
	}
	if err := yaml.Unmarshal(b, &t); err != nil {
		return t, err
	}
	switch {
	case t.VMType != "" && t.VMType != "vz" && t.VMType != "qemu":
		return t, fmt.Errorf("vmType `%s` is not a registered driver", t.VMType)
	case t.Arch != "" && t.Arch != "aarch64" && t.Arch != "x86_64":
		return t, fmt.Errorf("field `arch` must be one of [x86_64 aarch64 armv7l ppc64le riscv64 s390x]; got %q", t.Arch)
	case len(t.Images) == 0:
		return t, errors.New("field `images` must be set")
	}
	return t, nil
}

// fakeRun does what limactl would, on the fake's instance directories.
func fakeRun(dir string, args []string, stdin []byte) error {
	instances := filepath.Join(dir, "instances")
	inst := func(name string) string { return filepath.Join(instances, name) }
	if len(args) == 0 {
		return fmt.Errorf("fake limactl: no command")
	}
	last := args[len(args)-1]
	if home := os.Getenv("LIMA_HOME"); home != "" && args[0] != "--version" {
		if fi, err := os.Stat(home); err == nil && !fi.IsDir() {
			return fmt.Errorf("open %s: not a directory", home)
		}
	}
	switch args[0] {
	case "--version":
		v := os.Getenv("FAKE_LIMA_VERSION")
		if v == "" {
			v = "limactl version 2.2.0-153-g183a60d7.m"
		}
		fmt.Println(v)
	case "validate":
		if _, err := readTemplate(last); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, limaLine("info", "`"+last+"`: OK"))
	case "create":
		name := strings.TrimPrefix(args[2], "--name=")
		if _, err := os.Stat(inst(name)); err == nil {
			return fmt.Errorf("instance `%s` already exists", name)
		}
		t, err := readTemplate(last)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(last)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(inst(name), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(inst(name), "lima.yaml"), b, 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(inst(name), "status"), []byte("Stopped"), 0o600); err != nil {
			return err
		}
		// Lima keeps the instance it made when the image cannot be had.
		// The fake fetches nothing over the network.
		if loc := t.Images[0].Location; filepath.IsAbs(loc) {
			if _, err := os.Stat(loc); err != nil {
				return fmt.Errorf("failed to download `%s`: failed to open source %s: %w", loc, loc, err)
			}
		}
	case "start":
		fmt.Println("INFO[0000] READY. Run `limactl shell " + last + "` to open the shell.")
		return os.WriteFile(filepath.Join(inst(last), "status"), []byte("Running"), 0o600)
	case "copy":
		name, dst, _ := strings.Cut(last, ":")
		return os.CopyFS(filepath.Join(inst(name), "fs", dst), os.DirFS(args[len(args)-2]))
	case "list":
		b, err := os.ReadFile(filepath.Join(inst(last), "status"))
		if err != nil {
			fmt.Fprintln(os.Stderr, limaLine("warning", noInstanceMsg(last)))
			return errors.New("unmatched instances")
		}
		out, _ := json.Marshal(map[string]any{"name": last, "status": string(b), "dir": inst(last), "vmType": "vz", "cpus": 2})
		fmt.Println(string(out))
	case "delete":
		if _, err := os.Stat(inst(last)); err != nil {
			fmt.Fprintln(os.Stderr, limaLine("warning", "Ignoring non-existent instance `"+last+"`"))
			return nil
		}
		return os.RemoveAll(inst(last))
	case "shell":
		return fakeShell(filepath.Join(inst(args[2]), "fs"), args[3:], stdin)
	default:
		return fmt.Errorf("fake limactl: unknown command %q", args[0])
	}
	return nil
}

// fakeShell runs the few guest commands whose effect the tests look at:
// files read with cat, the token written through /dev/stdin, the journal.
func fakeShell(fs string, cmd []string, stdin []byte) error {
	switch {
	case slices.Contains(cmd, "cat"):
		file := cmd[len(cmd)-1]
		b, err := os.ReadFile(filepath.Join(fs, file))
		if err != nil {
			return fmt.Errorf("cat: %s: No such file or directory", file)
		}
		os.Stdout.Write(b)
	case slices.Contains(cmd, "/dev/stdin"):
		dst := filepath.Join(fs, cmd[len(cmd)-1])
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		return os.WriteFile(dst, stdin, 0o600)
	case slices.Contains(cmd, "journalctl"):
		fmt.Println("entrypoint: started xvfb (pid 101)\nentrypoint: started agentd (pid 140)")
	}
	return nil
}
