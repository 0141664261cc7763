// Package healthz is the host's one probe of agentd's /healthz, which
// answers 200 while agentd can capture the screen and send input.
package healthz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// timeout bounds one probe: a forward or socket that accepts and never
// answers must not hold a caller's loop.
const timeout = 5 * time.Second

// StatusError is agentd answering /healthz with another status than 200.
type StatusError struct{ Code int }

func (e *StatusError) Error() string { return fmt.Sprintf("/healthz answered %d", e.Code) }

// Probe asks agentd at addr ("host:port" or "unix:/path", as guest.Dial
// takes) whether it is healthy: nil when /healthz answers 200, a
// *StatusError for another status, else the error of reaching it.
func Probe(ctx context.Context, addr string) error {
	hc := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	url := "http://" + addr + "/healthz"
	if sock, ok := strings.CutPrefix(addr, "unix:"); ok {
		hc.Transport = &http.Transport{
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			},
		}
		url = "http://agentd/healthz"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &StatusError{Code: resp.StatusCode}
	}
	return nil
}

// Describe says what a probe found, for people: "ok", "failing (/healthz
// answered 503)" or "unreachable: ...".
func Describe(err error) string {
	var se *StatusError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &se):
		return "failing (" + se.Error() + ")"
	}
	return "unreachable: " + err.Error()
}
