//go:build linux

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/prereq"

	"github.com/agentd-dev/agentd/internal/agentdtest"
)

// requireDesktop ends the test as prereq does when a program of the local
// guest is missing.
func requireDesktop(t *testing.T) {
	t.Helper()
	prereq.Programs(t, prereq.X, "Xvfb", "openbox")
}

// TestRunShortBench runs a very short bench against a real local guest and
// checks that the JSON has every figure with sane values. It asserts no
// speed: only that everything was measured.
func TestRunShortBench(t *testing.T) {
	requireDesktop(t)
	agentd := agentdtest.BinaryWithBenchProbe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{Sizes: []Size{{800, 600}}, Duration: MinDuration, AgentdPath: agentd})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rep.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	sane := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }
	// Allocations may one day be zero.
	saneCount := func(v float64) bool { return v >= 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

	want := map[string]bool{
		idShotNative: false, idShotFit: false, idShotSame: false, idCapture: false, idScale: false, idEncode: false, idEncodeFit: false,
		idScrot: true, idImport: true, idKbinaniPNG: true, idKbinani: true, idRobotgoPNG: true, idRobotgo: true,
		idWait: false, idEffect: false,
		idClick: false, idMove: false, idKeypress: false, idType: false,
		idXdoClick: true, idXdoMove: true, idXdoKey: true, idXdoType: true,
		idExecEmpty: false, idExecClick: false,
		idBrowserReadForm: false, idBrowserReadLarge: false, idBrowserClick: false, idBrowserShot: false,
		idComputerClickAck: false, idComputerShot: false,
		idRunnerOverhead: false, idBareLoop: true,
		idMCPRaw: false, idMCPCall: false, idActCall: true,
	}
	seen := map[string]bool{}
	for _, f := range back.Figures() {
		seen[f.ID] = true
		peer, known := want[f.ID]
		if !known {
			t.Errorf("unexpected figure %q", f.ID)
			continue
		}
		if f.Peer != peer {
			t.Errorf("%s: peer %v, want %v", f.ID, f.Peer, peer)
		}
		if f.Missing != "" {
			// A peer's tool may be missing; it must say what to install.
			// Code mode needs python3-pil, which only AGENTD_REQUIRE_X insists on.
			codeMode := (f.ID == idExecEmpty || f.ID == idExecClick) && !prereq.X.Required()
			if !peer && !codeMode {
				t.Errorf("%s: our own figure is missing: %s", f.ID, f.Missing)
			} else {
				t.Logf("%s: %s", f.ID, f.Missing)
			}
			continue
		}
		if f.N <= 0 || !sane(f.P50) || !sane(f.P99) || f.Unit == "" || f.Name == "" {
			t.Errorf("%s: not a sane figure: %+v", f.ID, f)
		}
		for _, r := range f.Vs {
			if !sane(r.Times) {
				t.Errorf("%s: ratio to %s is %v", f.ID, r.Peer, r.Times)
			}
		}
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("figure %q is not in the report", id)
		}
	}
	if len(back.Sizes) != 1 || back.InputSize != "800x600" {
		t.Fatalf("sizes %d, input size %q", len(back.Sizes), back.InputSize)
	}
	s := back.Sizes[0]
	if len(s.Images) != len(views) {
		t.Fatalf("images %+v", s.Images)
	}
	for _, c := range s.Images {
		if c.Width <= 0 || c.Height <= 0 || c.PNGBytes <= 0 || c.Base64Bytes <= c.PNGBytes || c.DataURLBytes <= c.Base64Bytes || c.Tokens <= 0 {
			t.Errorf("image cost %+v", c)
		}
	}
	m := s.Memory
	if m.Screenshots <= 0 || m.RSSBeforeKiB <= 0 || m.RSSAfterKiB <= 0 || m.HWMKiB < m.RSSAfterKiB ||
		m.CPUMSPerShot < 0 || m.MinorFaultsPerShot < 0 || !saneCount(m.PipelineAllocBytes) || !saneCount(m.PipelineAllocs) {
		t.Errorf("memory %+v", m)
	}
	if back.Machine.CPUs <= 0 || back.Formulas["est_input_tokens"] == "" {
		t.Errorf("machine %+v, formulas %v", back.Machine, back.Formulas)
	}
}
