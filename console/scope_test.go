package console

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// otherServer is another loopback HTTP server, as any local development
// server or tool would be: it logs the Cookie header of every request.
type otherServer struct {
	URL string

	mu      sync.Mutex
	cookies []string
	n       int
}

func startOtherServer(t *testing.T) *otherServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &otherServer{URL: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.n++
		if c := r.Header.Get("Cookie"); c != "" {
			o.cookies = append(o.cookies, r.URL.Path+": "+c)
		}
		o.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<!doctype html><title>other</title><img src="/pixel.png"><p>another local server</p>`))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return o
}

// Cookies ignore ports: a console cookie of Path=/ on 127.0.0.1 went to
// every other server on 127.0.0.1 the browser visited, which could replay
// it and take the desktop. Signed in to the console in Chromium, the
// browser then visits another loopback server (its page, a resource of
// it, and the paths the console itself serves): that server never
// receives the session cookie. The console page still works.
func TestConsoleAuthCookieNeverReachesAnotherLocalServer(t *testing.T) {
	runs := t.TempDir()
	writeRun(t, runs, "r1")
	s := startConsole(t, Config{RunsDir: runs, CurrentRun: "r1"})
	other := startOtherServer(t)
	ctx := headless(t)

	if resp := run(t, ctx, chromedp.NavigateResponse(s.URL())); resp.Status != 200 {
		t.Fatalf("the one-time URL: HTTP %d", resp.Status)
	}
	// The page is at the prefix and its relative addresses work.
	run(t, ctx, chromedp.Navigate(s.Base()+"/#/runs/r1"))
	run(t, ctx, chromedp.Poll[bool](`document.querySelectorAll('li.step').length === 3 && document.querySelector('li.step img').complete &&
		document.querySelector('li.step img').naturalWidth === 1280`))

	for _, path := range []string{"/", "/login", "/api/runs", "/api/runs/r1/step-001.png", "/static/app.js", "/live"} {
		run(t, ctx, chromedp.Navigate(other.URL+path))
	}
	// Polled once the last page's document is there (a poll started as
	// the document changes fails with "Cannot find context").
	run(t, ctx, chromedp.WaitReady("img"))
	run(t, ctx, chromedp.Poll[bool](`document.querySelector('img').complete`))
	other.mu.Lock()
	defer other.mu.Unlock()
	if other.n < 7 {
		t.Fatalf("the other server got %d requests, want the 6 visits and an image", other.n)
	}
	for _, c := range other.cookies {
		if strings.Contains(c, cookieName) {
			t.Errorf("the other local server received the console's cookie: %s", c)
		}
	}
}

// A symlink in a record (to a readable file elsewhere), or a run folder
// that is a symlink, is not served: only regular files inside the run's
// own folder are.
func TestConsoleRecordSymlinkRefused(t *testing.T) {
	runs := t.TempDir()
	writeRun(t, runs, "r1")
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("outside the records"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(runs, "r1", "step-009.png")); err != nil {
		t.Fatal(err)
	}
	// A run folder elsewhere, linked into the runs folder, whose files
	// are real ones.
	writeRun(t, outside, "elsewhere")
	if err := os.Symlink(filepath.Join(outside, "elsewhere"), filepath.Join(runs, "r2")); err != nil {
		t.Fatal(err)
	}
	// A record whose events are a link to another record's.
	if err := os.Mkdir(filepath.Join(runs, "r3"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "elsewhere", "events.jsonl"), filepath.Join(runs, "r3", "events.jsonl")); err != nil {
		t.Fatal(err)
	}

	s := startConsole(t, Config{RunsDir: runs})
	signedInCodes(t, s, map[string]int{
		"/api/runs/r1/step-001.png": http.StatusOK,
		"/api/runs/r1":              http.StatusOK,
		"/api/runs/r1/step-009.png": http.StatusNotFound,
		"/api/runs/r2/step-001.png": http.StatusNotFound,
		"/api/runs/r2":              http.StatusNotFound,
		"/api/runs/r3":              http.StatusNotFound,
	})
}
