//go:build unix

package ledger

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A helper process: holds the ledger named by LEDGER_HOLD, says "held" and
// waits for its stdin to close (or to be killed).
func TestMain(m *testing.M) {
	if dir := os.Getenv("LEDGER_HOLD"); dir != "" {
		f, err := Open(dir)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("held")
		bufio.NewReader(os.Stdin).ReadString('\n')
		f.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestTornCheckpointFallsBackToThePreviousGoodOne(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := 1; i <= 5; i++ {
		if err := f.Save(fmt.Appendf(nil, `{"n":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	names, _ := f.names()
	if len(names) != keep {
		t.Fatalf("%d checkpoints on disk, want %d: %v", len(names), keep, names)
	}
	data, seq, err := f.Last()
	if err != nil || string(data) != `{"n":5}` || seq != 5 {
		t.Fatalf("Last = %q %d %v", data, seq, err)
	}
	// Tear the newest at every length: the previous one must come back.
	newest := filepath.Join(dir, names[1])
	whole, _ := os.ReadFile(newest)
	for n := len(whole) - 1; n >= 0; n-- {
		if err := os.WriteFile(newest, whole[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		data, seq, err := f.Last()
		if err != nil || string(data) != `{"n":4}` || seq != 4 {
			t.Fatalf("torn to %d bytes: Last = %q %d %v", n, data, seq, err)
		}
	}
	// A flipped byte is torn too.
	bad := append([]byte(nil), whole...)
	bad[3] ^= 1
	os.WriteFile(newest, bad, 0o644)
	if data, _, _ := f.Last(); string(data) != `{"n":4}` {
		t.Fatalf("corrupt newest: Last = %q", data)
	}
	// Both torn: nothing readable.
	os.WriteFile(filepath.Join(dir, names[0]), nil, 0o644)
	if _, _, err := f.Last(); !errors.Is(err, ErrNone) {
		t.Fatalf("all torn: err = %v", err)
	}
	// A new checkpoint numbers after the torn ones and is read back.
	if err := f.Save([]byte(`{"n":6}`)); err != nil {
		t.Fatal(err)
	}
	if data, seq, _ := f.Last(); string(data) != `{"n":6}` || seq != 6 {
		t.Fatalf("after a new save: Last = %q %d", data, seq)
	}
}

func TestReopenContinuesTheNumbering(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	f.Save([]byte("a"))
	f.Save([]byte("b"))
	f.Close()
	if err := f.Save([]byte("c")); err == nil {
		t.Fatal("Save after Close succeeded")
	}
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.Save([]byte("c"))
	if data, seq, _ := g.Last(); string(data) != "c" || seq != 3 {
		t.Fatalf("Last = %q %d", data, seq)
	}
}

// hold starts a process holding dir and waits until it holds it.
func hold(t *testing.T, dir string) (*exec.Cmd, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LEDGER_HOLD="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "held" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q", line)
	}
	return cmd, func() { stdin.Close(); cmd.Wait() }
}

func TestASecondProcessIsRefused(t *testing.T) {
	dir := t.TempDir()
	cmd, done := hold(t, dir)
	_, err := Open(dir)
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), fmt.Sprint(cmd.Process.Pid)) {
		t.Fatalf("Open while another process holds it: %v, want ErrHeld naming process %d", err, cmd.Process.Pid)
	}
	done()
	f, err := Open(dir)
	if err != nil {
		t.Fatalf("Open after the holder released it: %v", err)
	}
	f.Close()
}

func TestAStaleLockOfADeadProcessIsTakenOver(t *testing.T) {
	dir := t.TempDir()
	cmd, done := hold(t, dir)
	cmd.Process.Kill()
	done()
	if b, _ := os.ReadFile(filepath.Join(dir, "ledger.lock")); !strings.Contains(string(b), fmt.Sprint(cmd.Process.Pid)) {
		t.Fatalf("the killed holder left no lock naming it: %q", b)
	}
	f, err := Open(dir)
	if err != nil {
		t.Fatalf("Open after the holder died: %v", err)
	}
	f.Close()
}

func TestASecondOpenInTheSameProcessIsRefused(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Open(dir); !errors.Is(err, ErrHeld) {
		t.Fatalf("second Open: %v", err)
	}
}

// A checkpoint holds typed text and the model's code: the folder is 0700
// (even one that existed, readable by others) and its files 0600.
func TestFilesArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Save([]byte(`{"typed":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("folder: %v %v, want 0700", fi.Mode(), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 2 {
		t.Fatalf("entries %v %v, want a checkpoint and the lock", entries, err)
	}
	for _, e := range entries {
		if fi, err := e.Info(); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want 0600", e.Name(), fi.Mode(), err)
		}
	}
}
