package agentd

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
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
func CheckListenAddr(addr string, haveToken bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if !haveToken {
		return errors.New("refusing to listen without a token")
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		return fmt.Errorf("refusing to listen on all interfaces (%q): name loopback or the container's own address", addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil {
		return fmt.Errorf("listen address %q: host must be an IP address", addr)
	}
	return nil
}
