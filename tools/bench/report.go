package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Report is everything one run measured. The table and the JSON carry the
// same figures.
type Report struct {
	Machine  Machine `json:"machine"`
	Started  string  `json:"started"`
	Duration string  `json:"duration_per_figure"`
	// Sizes has one entry per screen size, in the order asked for.
	Sizes []SizeReport `json:"sizes"`
	// Input was measured on the screen InputSize.
	InputSize string   `json:"input_size"`
	Input     []Figure `json:"input"`
	// Browser holds the browser toolset's figures (Chromium in a guest of
	// its own, on the InputSize screen) and the computer tool's beside them.
	Browser []Figure `json:"browser,omitempty"`
	// GuestStart is a Docker guest's start, cold and pooled (agentctl
	// adds it).
	GuestStart *GuestStart       `json:"guest_start,omitempty"`
	Formulas   map[string]string `json:"formulas"`
}

// SizeReport is what was measured on one screen size.
type SizeReport struct {
	Size       string      `json:"size"`
	Screenshot []Figure    `json:"screenshot"`
	Settle     []Figure    `json:"settle"`
	Images     []ImageCost `json:"images"`
	Memory     Memory      `json:"agentd_memory"`
}

// Memory is agentd's footprint while it serves screenshots in steady state.
// agentd is another process: its resident set, page faults and CPU time come
// from /proc; its allocations cannot be read from outside, so the probe
// counts those of the same capture, scale and encode code in its own process.
type Memory struct {
	Screenshots int    `json:"screenshots"`
	View        string `json:"view"`
	// From /proc/PID/status (VmRSS, VmHWM) before and after the screenshots.
	RSSBeforeKiB int64 `json:"rss_before_kib"`
	RSSAfterKiB  int64 `json:"rss_after_kib"`
	HWMKiB       int64 `json:"hwm_kib"`
	// From /proc/PID/stat (minflt, utime+stime at 100 ticks per second).
	MinorFaultsPerShot float64 `json:"minor_faults_per_screenshot"`
	CPUMSPerShot       float64 `json:"cpu_ms_per_screenshot"`
	// From runtime.MemStats in the probe, for capture+scale+encode.
	PipelineAllocBytes float64 `json:"pipeline_alloc_bytes_per_screenshot"`
	PipelineAllocs     float64 `json:"pipeline_allocs_per_screenshot"`
}

// Machine describes where the run happened.
type Machine struct {
	CPUs        int        `json:"cpus"`
	CPUModel    string     `json:"cpu_model,omitempty"`
	MemTotalMiB int        `json:"mem_total_mib,omitempty"`
	Kernel      string     `json:"kernel,omitempty"`
	Go          string     `json:"go"`
	LoadStart   [3]float64 `json:"load_average_start"`
	LoadEnd     [3]float64 `json:"load_average_end"`
}

func newReport(o Options, m Machine) *Report {
	return &Report{
		Machine:  m,
		Started:  time.Now().UTC().Format(time.RFC3339),
		Duration: o.Duration.String(),
		Formulas: map[string]string{
			"est_input_tokens": TokensFormula,
			"bytes":            BytesFormula,
			"p50_p99":          "nearest-rank percentiles of the samples; for a rate, p99 is the rate at the 99th percentile of time",
			"vs":               "peer median / our median for times, our median / peer median for rates: how many times faster we are",
		},
	}
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// Figures returns every figure of the report, for checks.
func (r *Report) Figures() []Figure {
	var all []Figure
	for _, s := range r.Sizes {
		all = append(all, s.Screenshot...)
		all = append(all, s.Settle...)
	}
	all = append(all, r.Input...)
	return append(all, r.Browser...)
}
