// Package dialaddr reaches agentd at a stored address, the one way every
// host program reads one: "host:port", "ws://host:port" or "unix:/path"
// ("unix:///path" too). A backend reached otherwise (a tunnel, an API
// server's port-forward) gives its own dial function (backend.Dialer).
package dialaddr

import (
	"context"
	"net"
	"strings"
)

// Func returns a function that dials agentd at addr.
func Func(addr string) func(context.Context) (net.Conn, error) {
	network, address := Split(addr)
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, address)
	}
}

// Split says what net.Dial takes for addr: ("unix", path) or ("tcp",
// host:port).
func Split(addr string) (network, address string) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		return "unix", strings.TrimPrefix(path, "//")
	}
	if _, rest, ok := strings.Cut(addr, "://"); ok {
		addr = rest
	}
	return "tcp", strings.TrimSuffix(addr, "/")
}
