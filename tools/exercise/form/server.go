// Package form is the exercise's pickup form (docs/design.md, "The exercise"): a record server on
// the loopback that serves the page, laid out in page pixels from
// layout.go, appends each valid submission to a record file and keeps the
// page's report of where its controls are. A local exercise desktop runs it
// in its own process; a guest without a network runs it inside
// (exercise/cmd/pickup-form) and its files are read back out.
package form

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/internal/fsync"
)

// Record is one submission of the pickup form, as saved in the record file.
type Record struct {
	Name    string    `json:"name"`
	Date    string    `json:"date"` // YYYY-MM-DD
	Slot    string    `json:"slot"` // Morning, Afternoon or Evening
	Fragile bool      `json:"fragile"`
	SavedAt time.Time `json:"saved_at"`
}

// Rect is a rectangle as the browser reports it, in CSS pixels.
type Rect struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

// PageReport is what the form page reports once it is loaded and painted:
// where its viewport is on the screen and where each control is in it.
type PageReport struct {
	Viewport   Rect            `json:"viewport"` // X, Y: screen position of page pixel (0, 0)
	PixelRatio float64         `json:"pixel_ratio"`
	Controls   map[string]Rect `json:"controls"` // page pixels, by control name
}

// Limits of what the server accepts.
const (
	maxFormBytes   = 16 << 10
	maxReportBytes = 16 << 10
	maxNameRunes   = 100
)

var datePattern = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)

// RecordServer serves the pickup form on loopback and appends every valid
// submission to a record file as one JSON line. It accepts the form and
// nothing else: other paths, methods, content types, fields or origins
// are refused and change nothing.
type RecordServer struct {
	path       string
	reportPath string
	addr       string
	origin     string
	srv        *http.Server

	mu       sync.Mutex // serialises appends; guards the fields below
	last     *Record
	report   *PageReport
	reported chan struct{} // closed at the first page report
}

// NewRecordServer listens on 127.0.0.1 (a free port) and serves until
// Close. Submissions are appended to recordFile (created 0600 if missing).
func NewRecordServer(recordFile string) (*RecordServer, error) {
	return ListenRecordServer("127.0.0.1:0", recordFile, "")
}

// ListenRecordServer is NewRecordServer on a given loopback address. With
// reportFile set, each page report is also written there (JSON, 0600): a
// record server inside a guest (cmd/pickup-form) is read from outside
// through files.
func ListenRecordServer(addr, recordFile, reportFile string) (*RecordServer, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("record server: address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("record server: address %q: want a loopback IP address", addr)
	}
	f, err := os.OpenFile(recordFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("record file: %w", err)
	}
	f.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("record server: %w", err)
	}
	s := &RecordServer{
		path:       recordFile,
		reportPath: reportFile,
		addr:       ln.Addr().String(),
		origin:     "http://" + ln.Addr().String(),
		reported:   make(chan struct{}),
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the form page's address.
func (s *RecordServer) URL() string { return s.origin + "/" }

// RecordFile is the file submissions are appended to.
func (s *RecordServer) RecordFile() string { return s.path }

// Records reads every submission saved so far.
func (s *RecordServer) Records() ([]Record, error) { return ReadRecords(s.path) }

// Close stops the server.
func (s *RecordServer) Close() error { return s.srv.Close() }

// PageLoaded waits until the form page has been loaded and painted in a
// browser at least once, and returns its latest report.
func (s *RecordServer) PageLoaded(ctx context.Context) (PageReport, error) {
	select {
	case <-s.reported:
		s.mu.Lock()
		defer s.mu.Unlock()
		return *s.report, nil
	case <-ctx.Done():
		return PageReport{}, fmt.Errorf("form page not loaded in a browser: %w", ctx.Err())
	}
}

// ReadRecords reads a record file: one JSON object per line.
func ReadRecords(path string) ([]Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	return ParseRecords(data, path)
}

// ParseRecords parses a record file's content; name names it in errors.
func ParseRecords(data []byte, name string) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var r Record
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("records: %s line %d: %w", name, n, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("records: %s: %w", name, err)
	}
	return out, nil
}

// ServeHTTP routes the four requests the page makes.
func (s *RecordServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A Host other than our own address is a DNS-rebinding attempt: no
	// page of ours sends one.
	if r.Host != s.addr {
		http.Error(w, "wrong host", http.StatusMisdirectedRequest)
		return
	}
	switch r.URL.Path {
	case "/":
		s.only(w, r, http.MethodGet, s.serveForm)
	case "/saved":
		s.only(w, r, http.MethodGet, s.serveSaved)
	case "/submit":
		s.only(w, r, http.MethodPost, s.serveSubmit)
	case "/loaded":
		s.only(w, r, http.MethodPost, s.serveLoaded)
	default:
		http.NotFound(w, r)
	}
}

// only runs h for method (GET also allows HEAD) and refuses the rest.
func (s *RecordServer) only(w http.ResponseWriter, r *http.Request, method string, h http.HandlerFunc) {
	if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
		w.Header().Set("Allow", method)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if method == http.MethodPost && !s.sameOrigin(r) {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
		return
	}
	h(w, r)
}

// sameOrigin refuses posts from other pages: a browser names the page's
// origin; a request without Origin comes from no page at all.
func (s *RecordServer) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o == "" || o == s.origin
}

func (s *RecordServer) serveForm(w http.ResponseWriter, r *http.Request) {
	renderPage(w, http.StatusOK, formPage, layoutData)
}

func (s *RecordServer) serveSaved(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	last := s.last
	s.mu.Unlock()
	renderPage(w, http.StatusOK, savedPage, last)
}

func (s *RecordServer) serveSubmit(w http.ResponseWriter, r *http.Request) {
	rec, err := parseSubmission(w, r)
	if err != nil {
		renderPage(w, http.StatusBadRequest, errorPage, err.Error())
		return
	}
	rec.SavedAt = time.Now().UTC()
	if err := s.appendRecord(rec); err != nil {
		renderPage(w, http.StatusInternalServerError, errorPage, "could not save: "+err.Error())
		return
	}
	// Post/Redirect/Get: reloading the confirmation never submits twice.
	http.Redirect(w, r, "/saved", http.StatusSeeOther)
}

// parseSubmission reads exactly the form's fields from a url-encoded body.
func parseSubmission(w http.ResponseWriter, r *http.Request) (Record, error) {
	var rec Record
	if r.URL.RawQuery != "" {
		return rec, errors.New("the form posts no query string")
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		return rec, errors.New("the form posts application/x-www-form-urlencoded")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return rec, fmt.Errorf("charset %q: the form posts UTF-8", cs)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxFormBytes))
	if err != nil {
		return rec, fmt.Errorf("reading the form: %w", err)
	}
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		return rec, fmt.Errorf("malformed form: %w", err)
	}
	for k, v := range vals {
		switch k {
		case "name", "date", "slot", "fragile":
		default:
			return rec, fmt.Errorf("unknown field %q", k)
		}
		if len(v) != 1 {
			return rec, fmt.Errorf("field %q sent %d times", k, len(v))
		}
	}
	rec.Name = vals.Get("name")
	if err := checkName(rec.Name); err != nil {
		return rec, err
	}
	rec.Date = vals.Get("date")
	if !datePattern.MatchString(rec.Date) {
		return rec, fmt.Errorf("date %q is not YYYY-MM-DD", rec.Date)
	}
	if _, err := time.Parse(time.DateOnly, rec.Date); err != nil {
		return rec, fmt.Errorf("date %q is not a calendar date", rec.Date)
	}
	rec.Slot = vals.Get("slot")
	if !validSlot(rec.Slot) {
		return rec, fmt.Errorf("pickup slot %q: choose Morning, Afternoon or Evening", rec.Slot)
	}
	switch f, sent := vals["fragile"]; {
	case !sent:
	case f[0] == "yes":
		rec.Fragile = true
	default:
		return rec, fmt.Errorf("fragile %q: the checkbox sends yes or nothing", f[0])
	}
	return rec, nil
}

func checkName(name string) error {
	if !utf8.ValidString(name) {
		return errors.New("name is not valid UTF-8")
	}
	if strings.TrimSpace(name) == "" {
		return errors.New("name is empty")
	}
	if n := utf8.RuneCountInString(name); n > maxNameRunes {
		return fmt.Errorf("name has %d characters; at most %d", n, maxNameRunes)
	}
	for _, c := range name {
		if unicode.IsControl(c) {
			return fmt.Errorf("name contains control character %U", c)
		}
	}
	return nil
}

func validSlot(slot string) bool {
	for _, s := range slots {
		if slot == s {
			return true
		}
	}
	return false
}

// appendRecord appends one JSON line and syncs it to disk before the
// browser is told "Saved".
func (s *RecordServer) appendRecord(rec Record) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := fsync.WriteFile(s.path, os.O_WRONLY|os.O_APPEND, 0, line); err != nil {
		return err
	}
	s.last = &rec
	return nil
}

func (s *RecordServer) serveLoaded(w http.ResponseWriter, r *http.Request) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "the page reports JSON", http.StatusUnsupportedMediaType)
		return
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxReportBytes))
	dec.DisallowUnknownFields()
	var rep PageReport
	if err := dec.Decode(&rep); err != nil {
		http.Error(w, "malformed report", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	first := s.report == nil
	s.report = &rep
	err := s.writeReport(rep)
	s.mu.Unlock()
	if first {
		close(s.reported)
	}
	if err != nil {
		http.Error(w, "could not save the report", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeReport replaces the report file, if any, in one rename, so a reader
// never sees half a report.
func (s *RecordServer) writeReport(rep PageReport) error {
	if s.reportPath == "" {
		return nil
	}
	data, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	tmp := s.reportPath + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.reportPath)
}
