package healthz

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

func TestProbeOverTCPAndUnixSocket(t *testing.T) {
	code := http.StatusOK
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(code)
	})
	tcp := httptest.NewServer(h)
	defer tcp.Close()
	sock := filepath.Join(t.TempDir(), "agentd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	unix := &http.Server{Handler: h}
	go func() { _ = unix.Serve(ln) }()
	defer unix.Close()

	ctx := context.Background()
	for _, addr := range []string{strings.TrimPrefix(tcp.URL, "http://"), "unix:" + sock} {
		code = http.StatusOK
		if err := Probe(ctx, addr); err != nil || Describe(err) != "ok" {
			t.Errorf("%s healthy: %v", addr, err)
		}
		code = http.StatusServiceUnavailable
		err := Probe(ctx, addr)
		var se *StatusError
		if !errors.As(err, &se) || se.Code != 503 || Describe(err) != "failing (/healthz answered 503)" {
			t.Errorf("%s failing: %v (%q)", addr, err, Describe(err))
		}
	}
	err = Probe(ctx, "unix:"+filepath.Join(t.TempDir(), "none.sock"))
	if err == nil || !strings.HasPrefix(Describe(err), "unreachable: ") {
		t.Errorf("no socket: %v", err)
	}
}
