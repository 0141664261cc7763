package mcpserver

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// Listen listens on a loopback address only: the MCP specification asks a
// local server to bind to localhost, and anything else would offer the
// desktop to the network.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--http %q: want 127.0.0.1:PORT: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("--http %q: only a loopback address (127.0.0.1 or [::1]) is served", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http: %w", err)
	}
	return ln, nil
}

// Guard lets a request reach next only with the bearer token and from no
// foreign web page: every request must carry "Authorization: Bearer
// token" (compared in constant time; 401 otherwise) and either no Origin
// or exactly the server's own (403 otherwise), as the MCP specification's
// security section asks against DNS rebinding. The SDK's handler checks
// the Host header too. The token is never echoed.
func Guard(next http.Handler, token, self string) http.Handler {
	want := []byte("Bearer " + token)
	own := "http://" + self
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && o != own {
			http.Error(w, "forbidden: a request from a web page of another origin", http.StatusForbidden)
			return
		}
		got := []byte(strings.TrimSpace(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentctl mcp"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
