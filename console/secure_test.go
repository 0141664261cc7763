package console

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
)

func startConsole(t testing.TB, cfg Config) *Server {
	t.Helper()
	cfg.Logf = t.Logf
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// noRedirect keeps the client on the login response itself.
func client(t testing.TB) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signedInCodes signs in to s and checks the HTTP status of each path.
func signedInCodes(t *testing.T, s *Server, codes map[string]int) {
	t.Helper()
	c := client(t)
	if r := get(t, c, s.URL(), nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: HTTP %d", r.StatusCode)
	}
	for path, code := range codes {
		if r := get(t, c, s.Base()+path, nil); r.StatusCode != code {
			t.Errorf("%s: HTTP %d, want %d", path, r.StatusCode, code)
		}
	}
}

func get(t testing.TB, c *http.Client, u string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// The secret works once and becomes an HttpOnly, SameSite=Strict cookie;
// without the cookie, from another origin or site, or under another Host
// name (DNS rebinding), nothing is served; there is no CORS, and every
// answer carries the CSP.
func TestConsoleIsSecured(t *testing.T) {
	runs := t.TempDir()
	writeRun(t, runs, "r1")
	s := startConsole(t, Config{RunsDir: runs})
	base := s.Base()
	c := client(t)

	if r := get(t, c, base+"/", nil); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the page without signing in: HTTP %d", r.StatusCode)
	}
	if r := get(t, c, base+"/login?secret=00", nil); r.StatusCode != http.StatusForbidden {
		t.Fatalf("a wrong secret: HTTP %d", r.StatusCode)
	}
	r := get(t, c, s.URL(), nil)
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != s.base+"/" {
		t.Fatalf("the secret: HTTP %d to %q", r.StatusCode, r.Header.Get("Location"))
	}
	sc := r.Header.Get("Set-Cookie")
	for _, want := range []string{cookieName + "=", "HttpOnly", "SameSite=Strict", "Path=" + s.base + ";"} {
		if !strings.Contains(sc, want) {
			t.Fatalf("cookie %q lacks %q", sc, want)
		}
	}
	if r := get(t, client(t), s.URL(), nil); r.StatusCode != http.StatusForbidden {
		t.Fatalf("the secret a second time: HTTP %d", r.StatusCode)
	}
	for _, path := range []string{"/", "/api/runs", "/api/runs/r1", "/api/runs/r1/step-001.png", "/static/app.js"} {
		r := get(t, c, base+path, nil)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("%s signed in: HTTP %d", path, r.StatusCode)
		}
		if !strings.Contains(r.Header.Get("Content-Security-Policy"), "script-src 'self'") || r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("%s headers: %v", path, r.Header)
		}
	}
	u, _ := url.Parse(base)
	_, port, _ := strings.Cut(u.Host, ":")
	for _, c2 := range []struct {
		name   string
		path   string
		header map[string]string
		code   int
	}{
		{"rebound DNS name", "/api/runs", map[string]string{"Host": "attacker.example:" + port}, http.StatusMisdirectedRequest},
		{"localhost by name", "/api/runs", map[string]string{"Host": "localhost:" + port}, http.StatusMisdirectedRequest},
		{"foreign Origin", "/api/runs", map[string]string{"Origin": "http://attacker.example"}, http.StatusForbidden},
		{"null Origin", "/api/runs", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"cross-site fetch", "/api/runs", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"foreign Origin on the live view", "/live", map[string]string{"Origin": "http://attacker.example", "Connection": "Upgrade", "Upgrade": "websocket"}, http.StatusForbidden},
		{"a path out of the runs", "/api/runs/..%2f..%2fetc/passwd", nil, http.StatusNotFound},
		{"a file that is not a screenshot", "/api/runs/r1/events.jsonl", nil, http.StatusNotFound},
		{"a run that is not there", "/api/runs/r2", nil, http.StatusNotFound},
	} {
		if r := get(t, c, base+c2.path, c2.header); r.StatusCode != c2.code {
			t.Errorf("%s: HTTP %d, want %d", c2.name, r.StatusCode, c2.code)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/api/runs", nil)
	if r, err := c.Do(req); err != nil || r.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %v %v", r, err)
	}
	req, _ = http.NewRequest(http.MethodOptions, base+"/api/runs", nil)
	req.Header.Set("Origin", "http://attacker.example")
	req.Header.Set("Access-Control-Request-Method", "GET")
	if r, err := c.Do(req); err != nil || r.StatusCode == http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("CORS preflight: %v %v", r, err)
	}
}

// The console listens on loopback only.
func TestConsoleRefusesANonLoopbackAddress(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "localhost:0"} {
		if s, err := Start(Config{Listen: addr}); err == nil {
			s.Close()
			t.Errorf("listened on %s", addr)
		}
	}
}
