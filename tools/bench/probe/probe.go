// Package probe measures, inside the guest, what the host cannot time from
// outside: agentd's capture, scaling and encoding on their own, and the
// in-process capture libraries that peers use (kbinani/screenshot, robotgo).
//
// `agentctl bench` starts it as the binary agentd-bench-probe (Binary,
// found next to agentd) with the guest's DISPLAY and XAUTHORITY, then asks for one measurement at a time, one JSON
// line each way over stdin and stdout. One sample per request lets the host
// interleave these samples with its own end-to-end ones, so that all of them
// see the same machine load.
//
// This package is the host's half (the protocol and Client); the probe's
// own code runs in the guest and lives in tools/bench/guestprobe, so that
// agentctl links none of it.
package probe

// Binary is the name of the probe's program (cmd/agentd-bench-probe).
const Binary = "agentd-bench-probe"

// The probes. Capture and encode probes work on the guest's real screen.
const (
	Capture        = "capture"         // agentd's capture (MIT-SHM when available)
	ScaleFit       = "scale-fit"       // agentd's scaler: native → fit within 1280×800
	EncodeNative   = "encode-native"   // agentd's PNG encoder, native image
	EncodeFit      = "encode-fit"      // agentd's PNG encoder, the 1280×800 image
	PipelineFit    = "pipeline-fit"    // capture + scale + encode, as agentd does per screenshot
	KbinaniCapture = "kbinani-capture" // kbinani/screenshot capture alone
	KbinaniPNG     = "kbinani-png"     // kbinani/screenshot + image/png (default level)
	RobotgoCapture = "robotgo-capture" // robotgo.CaptureImg
	RobotgoPNG     = "robotgo-png"     // robotgo.CaptureImg + image/png (default level)
)

// FitWidth and FitHeight bound the scaled view, as the model sees the screen.
const (
	FitWidth  = 1280
	FitHeight = 800
)

// Hello is the probe's first line: what it can measure, and why not the rest.
type Hello struct {
	Probes      []string          `json:"probes"`
	Unavailable map[string]string `json:"unavailable,omitempty"`
}

// Request asks for one timed run of Probe, or with Allocs > 0 for the
// allocations of that many runs.
type Request struct {
	Probe  string `json:"probe"`
	Allocs int    `json:"allocs,omitempty"`
}

// Reply answers one Request.
type Reply struct {
	NS    int64  `json:"ns,omitempty"`
	Bytes int    `json:"bytes,omitempty"`
	Err   string `json:"err,omitempty"`
	// AllocBytes and Allocs are per run, over the whole probe process.
	AllocBytes float64 `json:"alloc_bytes,omitempty"`
	Allocs     float64 `json:"allocs,omitempty"`
}
