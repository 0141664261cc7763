package eval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Paths of a task server besides its pages.
const (
	// recordPath takes a record: a JSON object, or a form whose fields
	// become one, appended to the records as one line.
	recordPath = "/__record"
	// loadedPath is posted by every served page once it is painted, which
	// is when the desktop is ready.
	loadedPath = "/__loaded"
)

// loadedScript is added to every page: the page tells the server once it
// is painted (two animation frames after load), so the model's first
// screenshot shows it.
const loadedScript = `<script>addEventListener("load",()=>requestAnimationFrame(()=>requestAnimationFrame(()=>fetch("` + loadedPath + `",{method:"POST"}))));</script>`

// maxRecordBytes bounds one record.
const maxRecordBytes = 16 << 10

// taskServer serves a task's pages on the loopback and appends each record
// posted to it to a file of the trial, where the record checkers read it.
type taskServer struct {
	srv     *http.Server
	addr    string
	file    string
	pages   map[string]string
	mu      sync.Mutex // serialises appends
	once    sync.Once
	painted chan struct{}
}

// startServer serves spec's pages, "{{server}}" replaced by the server's
// own address, and appends records to file.
func startServer(spec *Server, file string) (*taskServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("task server: %w", err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("task server: %w", err)
	}
	f.Close()
	s := &taskServer{addr: ln.Addr().String(), file: file, pages: map[string]string{}, painted: make(chan struct{})}
	for p, html := range spec.Pages {
		s.pages[p] = expand(html, s.URL()) + loadedScript
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the server's address without a trailing slash: "{{server}}".
func (s *taskServer) URL() string { return "http://" + s.addr }

func (s *taskServer) Close() error { return s.srv.Close() }

// Painted waits until a served page has been painted in a browser.
func (s *taskServer) Painted(ctx context.Context) error {
	select {
	case <-s.painted:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("task page not painted in the browser: %w", ctx.Err())
	}
}

func (s *taskServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Only our own address: another Host is a DNS-rebinding attempt.
	if r.Host != s.addr {
		http.Error(w, "wrong host", http.StatusMisdirectedRequest)
		return
	}
	switch {
	case r.URL.Path == loadedPath && r.Method == http.MethodPost:
		s.once.Do(func() { close(s.painted) })
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == recordPath && r.Method == http.MethodPost:
		s.record(w, r)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		page, ok := s.pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = io.WriteString(w, page)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// record appends a posted record: a JSON object, or form fields (each
// field's first value) as one.
func (s *taskServer) record(w http.ResponseWriter, r *http.Request) {
	// A page of ours posts from our origin; another site's page cannot.
	if o := r.Header.Get("Origin"); o != "" && o != s.URL() {
		http.Error(w, "cross-origin record refused", http.StatusForbidden)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRecordBytes))
	if err != nil {
		http.Error(w, "record too large", http.StatusRequestEntityTooLarge)
		return
	}
	var rec map[string]any
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/x-www-form-urlencoded":
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		rec = map[string]any{}
		for k, v := range r.PostForm {
			rec[k] = v[0]
		}
	default:
		if err := json.Unmarshal(body, &rec); err != nil || rec == nil {
			http.Error(w, "want a JSON object", http.StatusBadRequest)
			return
		}
	}
	line, err := json.Marshal(rec)
	if err != nil {
		http.Error(w, "bad record", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	err = appendLine(s.file, line)
	s.mu.Unlock()
	if err != nil {
		http.Error(w, "record not saved", http.StatusInternalServerError)
		return
	}
	// A form posted without script lands on a page saying it was saved.
	if ct == "application/x-www-form-urlencoded" {
		if next := r.URL.Query().Get("next"); strings.HasPrefix(next, "/") && !strings.HasPrefix(next, "//") {
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// appendLine appends line and a newline to file and syncs it.
func appendLine(file string, line []byte) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// parseRecords reads records: one JSON object per line.
func parseRecords(data []byte) ([]json.RawMessage, error) {
	var out []json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			return nil, fmt.Errorf("records line %d: not JSON", n)
		}
		out = append(out, json.RawMessage(bytes.Clone(line)))
	}
	return out, sc.Err()
}

// expand replaces "{{server}}" by the task server's address.
func expand(s, server string) string { return strings.ReplaceAll(s, "{{server}}", server) }
