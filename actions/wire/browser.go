package wire

import "encoding/json"

// The browser op family: one call of the guest's browser driver (agentd
// --browser) per request, run in order with the other requests. The
// request carries Browser; a done Reply carries the call's result in
// Browser (package browserrpc's Result); an error Reply with code
// CodeBrowserError carries a recoverable problem whose message is shown to
// the model (a stale ref, a page that did not load).
const (
	OpBrowser         = "browser"
	CodeBrowserError  = "browser_error"
	CapabilityBrowser = "browser"
)

// BrowserCall is one browser driver call: a browser member ("state" for
// the state) and its arguments as the browser contract defines them.
type BrowserCall struct {
	Member string          `json:"member"`
	Args   json.RawMessage `json:"args"`
}
