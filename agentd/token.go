package agentd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"
)

// TokenEnv is the environment variable that may carry the token instead of a file.
const TokenEnv = "AGENTD_TOKEN"

// LoadToken reads the token from path, or from $AGENTD_TOKEN when path is
// empty. A token file readable by group or others is refused: the token
// controls a keyboard.
func LoadToken(path string) ([]byte, error) {
	if path == "" {
		tok := strings.TrimSpace(os.Getenv(TokenEnv))
		if tok == "" {
			return nil, fmt.Errorf("no token: pass --token-file or set %s", TokenEnv)
		}
		return checkToken([]byte(tok), TokenEnv)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("token file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("token file %s is readable by group or others (mode %04o); run: chmod 600 %s", path, perm, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	return checkToken(bytes.TrimSpace(data), "token file "+path)
}

func checkToken(tok []byte, from string) ([]byte, error) {
	if len(tok) < 16 {
		return nil, fmt.Errorf("%s: token is shorter than 16 characters", from)
	}
	for _, c := range tok {
		if c <= ' ' || c == 0x7f {
			return nil, fmt.Errorf("%s: token contains whitespace or control characters", from)
		}
	}
	return tok, nil
}

// CheckListenAddr refuses addresses agentd must not listen on: every TCP
// listener needs a token, and a wildcard address would expose the keyboard
// on every interface; a container's own interface must be named explicitly.
// The host is parsed, not compared as a string, so every spelling of an
// unspecified address ("[::0]", "[0:0:0:0:0:0:0:0]", "[::ffff:0.0.0.0]", a
// zone on any of them) is refused; the only name accepted is "localhost",
// and only when every address it resolves to is loopback.
func CheckListenAddr(addr string, haveToken bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if !haveToken {
		return errors.New("refusing to listen without a token")
	}
	if host == "" {
		return fmt.Errorf("refusing to listen on all interfaces (%q): name loopback or the container's own address", addr)
	}
	if host == "localhost" {
		return checkLocalhost(addr)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("listen address %q: host must be an IP address or localhost", addr)
	}
	if ip.WithZone("").Unmap().IsUnspecified() {
		return fmt.Errorf("refusing to listen on all interfaces (%q is the unspecified address): name loopback or the container's own address", addr)
	}
	return nil
}

// checkLocalhost resolves localhost as net.Listen will and refuses it
// unless every address is loopback (a hosts file could say otherwise).
func checkLocalhost(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", "localhost")
	if err != nil {
		return fmt.Errorf("listen address %q: resolve localhost: %w", addr, err)
	}
	for _, ip := range ips {
		if !ip.WithZone("").Unmap().IsLoopback() {
			return fmt.Errorf("refusing to listen on %q: localhost resolves to %s, which is not loopback", addr, ip)
		}
	}
	return nil
}
