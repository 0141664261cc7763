package wire

// The watch role: a connection to WatchPath with the same token and the
// subprotocol WatchSubprotocol only receives frames of the screen. It never
// takes the controller slot and can never send input: agentd closes a
// watcher that sends any message (StatusPolicyViolation).
//
// After the upgrade the server sends Hello; then, each time the screen has
// changed (its frame hash), at most MaxWatchFPS times a second, one
// WatchFrame text message followed by one binary frame holding the PNG. A
// frame that cannot be written while the previous one is still being
// written is dropped, never queued: a slow watcher sees fewer frames.
//
// Query parameters of the upgrade request: fps (1..MaxWatchFPS, default
// DefaultWatchFPS) and width and height (the frame fits within them, aspect
// kept; default the screen's own size).
const (
	WatchPath        = "/v1/watch"
	WatchSubprotocol = "agentd.watch.v1"
	OpFrame          = "frame"
	DefaultWatchFPS  = 15
	MaxWatchFPS      = 30
	// MaxWatchers bounds the watchers of one agentd; one more is told
	// "busy" (StatusTryAgainLater).
	MaxWatchers = 4
)

// WatchFrame describes the PNG in the binary frame that follows.
type WatchFrame struct {
	Op     string `json:"op"`  // OpFrame
	Seq    uint64 `json:"seq"` // from 1, in the order sent
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Bytes  int    `json:"bytes"`
	// CaptureUS and EncodeUS are what the frame cost agentd.
	CaptureUS int64 `json:"capture_us"`
	EncodeUS  int64 `json:"encode_us"`
}
