//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/randhex"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// assertPrivate checks every file under root, byte for byte, for each
// secret, and that every folder is 0700 and every file 0600 (root
// included): a record shows the desktop and the model's messages.
func assertPrivate(t *testing.T, root string, secrets ...string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		} else if !fi.Mode().IsRegular() {
			t.Errorf("%s is a %v, not a regular file", path, fi.Mode().Type())
			return nil
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", path, fi.Mode().Perm(), want)
		}
		if fi.IsDir() {
			return nil
		}
		files++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds %q", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatalf("no files under %s", root)
	}
}

// TestRecordPrivateTypedTextAndCode runs the real agentctl against a real
// agentd --code on Xvfb, with a scripted model that types unique texts
// (computer mode) and runs code holding a unique marker (code mode). No
// file under the records' folder holds them, every folder there is 0700
// and every file 0600; the checkpoints, which must hold them for a resume,
// live in the private state folder (0700/0600) and are gone once the run
// ended well. The computer run is killed after its typing response was
// checkpointed and resumed to its end, checked at both moments.
func TestRecordPrivateTypedTextAndCode(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-I", "-c", "import PIL.Image").Run(); err != nil {
		prereq.Missing(t, prereq.X, "code execution needs /usr/bin/python3 with PIL (apt-get install python3 python3-pil): %v", err)
	}
	r := newCrashRig(t, "--code")
	ledgers := filepath.Join(r.state, "agentd", "runs")

	t.Run("computer", func(t *testing.T) {
		r.t = t
		r.rec.Clear()
		typedA, typedB := "tya"+randhex.String(6), "tyb"+randhex.String(6)
		srv, url := respserver.Start(
			respserver.Call(`{"type":"screenshot"}`),
			respserver.Items(respserver.ComputerCall(`{"type":"click","button":"left","x":100,"y":100}`),
				respserver.ComputerCall(`{"type":"type","text":"`+typedA+`"}`)),
			respserver.Call(`{"type":"type","text":"`+typedB+`"}`),
			respserver.Final("done"))
		defer srv.Close()
		records := filepath.Join(t.TempDir(), "runs")
		// Killed after the click: the response holding typedA is in the
		// checkpoints, its typing still to run.
		run := r.killed(url, "after_call:2", records)
		assertPrivate(t, records, typedA, typedB)
		led := filepath.Join(ledgers, filepath.Base(run))
		assertLedgerHolds(t, led, typedA)
		if out, err := r.command(url, "", "--resume", run).CombinedOutput(); err != nil {
			t.Fatalf("resume: %v\n%s", err, out)
		}
		if err := srv.Err(); err != nil {
			t.Fatal(err)
		}
		r.verify(typedA + typedB)
		assertPrivate(t, records, typedA, typedB)
		if _, err := os.Stat(led); !os.IsNotExist(err) {
			t.Errorf("the checkpoints of the finished run are still there: %v", err)
		}
	})

	t.Run("code", func(t *testing.T) {
		r.t = t
		typed, marker := "tyc"+randhex.String(6), "marker"+randhex.String(6)
		code, _ := json.Marshal(map[string]string{"code": "pyautogui.write('" + typed + "')  # " + marker})
		srv, url := respserver.Start(
			respserver.Items(respserver.FunctionCall("exec_py", string(code))),
			respserver.Final("done"))
		defer srv.Close()
		records := filepath.Join(t.TempDir(), "runs")
		if out, err := r.command(url, "", "--mode", "code", "--max-steps", "4", "--record-dir", records, "type it").CombinedOutput(); err != nil {
			t.Fatalf("agentctl run --mode code: %v\n%s", err, out)
		}
		if err := srv.Err(); err != nil {
			t.Fatal(err)
		}
		assertPrivate(t, records, typed, marker)
		if runs, _ := filepath.Glob(filepath.Join(ledgers, "*")); len(runs) != 0 {
			t.Errorf("checkpoints left after the run: %v", runs)
		}
	})
}

// assertLedgerHolds checks that the run's checkpoints are private and hold
// want: they are where the typed text went instead of the record.
func assertLedgerHolds(t *testing.T, dir, want string) {
	t.Helper()
	assertPrivate(t, filepath.Dir(filepath.Dir(dir))) // agentd/, runs/ and every run's checkpoints
	cps, _ := filepath.Glob(filepath.Join(dir, "checkpoint-*.json"))
	if len(cps) == 0 {
		t.Fatalf("no checkpoints in %s", dir)
	}
	data, err := os.ReadFile(cps[len(cps)-1])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(want)) {
		t.Fatalf("the newest checkpoint lacks the call still to run (%q)", want)
	}
}
