package vm

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The fake limactl is this test binary, run through a symlink named
// limactl (TestMain dispatches on the name). It records every invocation
// (arguments and standard input) in $FAKE_LIMA_DIR/calls.jsonl and keeps
// instances as directories under $FAKE_LIMA_DIR/instances: the guest's
// files live in <instance>/fs, and start writes a Lima-like host agent log.
// It simulates:
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
		fmt.Fprintf(os.Stderr, "fake output before the failure\nFATA[0000] %s\n", msg)
		return 1
	}
	if err := fakeRun(dir, args, stdin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// fakeRun does what limactl would, on the fake's instance directories.
func fakeRun(dir string, args []string, stdin []byte) error {
	instances := filepath.Join(dir, "instances")
	inst := func(name string) string { return filepath.Join(instances, name) }
	if len(args) == 0 {
		return fmt.Errorf("fake limactl: no command")
	}
	last := args[len(args)-1]
	switch args[0] {
	case "--version":
		v := os.Getenv("FAKE_LIMA_VERSION")
		if v == "" {
			v = "limactl version 1.0.3"
		}
		fmt.Println(v)
	case "create":
		name := strings.TrimPrefix(args[2], "--name=")
		if err := os.MkdirAll(inst(name), 0o700); err != nil {
			return err
		}
		b, err := os.ReadFile(last)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(inst(name), "lima.yaml"), b, 0o600); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(inst(name), "status"), []byte("Stopped"), 0o600)
	case "start":
		fmt.Println("INFO[0000] READY. Run `limactl shell " + last + "` to open the shell.")
		return os.WriteFile(filepath.Join(inst(last), "status"), []byte("Running"), 0o600)
	case "copy":
		name, dst, _ := strings.Cut(last, ":")
		return os.CopyFS(filepath.Join(inst(name), "fs", dst), os.DirFS(args[len(args)-2]))
	case "list":
		b, err := os.ReadFile(filepath.Join(inst(last), "status"))
		if err != nil {
			fmt.Fprintf(os.Stderr, "WARN[0000] No instance matching %s found.\n", last)
			return nil
		}
		out, _ := json.Marshal(map[string]any{"name": last, "status": string(b), "dir": inst(last), "vmType": "vz", "cpus": 2})
		fmt.Println(string(out))
	case "delete":
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
