package console

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"
)

// runID is a run folder's name as agentctl makes it; nothing else is looked
// up, so a request cannot leave RunsDir.
var runID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// shotFile is a screenshot file's name in a record.
var shotFile = regexp.MustCompile(`^step-\d{3,}(-\d+)?\.png$`)

// listNewest reads the summary of each folder in dir whose name is a
// runID and that read can read, newest first by started; no dir is no
// folders.
func listNewest[S any](dir string, read func(id string) (S, error), started func(S) time.Time) ([]S, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return []S{}, nil
	}
	if err != nil {
		return nil, err
	}
	list := []S{}
	for _, e := range entries {
		if !e.IsDir() || !runID.MatchString(e.Name()) {
			continue
		}
		if s, err := read(e.Name()); err == nil {
			list = append(list, s)
		}
	}
	slices.SortFunc(list, func(a, b S) int { return started(b).Compare(started(a)) })
	return list, nil
}

func (s *Server) serveRuns(w http.ResponseWriter, r *http.Request) {
	runs, err := listRuns(s.cfg.RunsDir)
	if err != nil {
		s.cfg.Logf("console: list runs: %v", err)
		http.Error(w, "cannot list the runs", http.StatusInternalServerError)
		return
	}
	writeJSON(w, struct {
		Current string       `json:"current,omitempty"`
		Runs    []RunSummary `json:"runs"`
	}{s.cfg.CurrentRun, runs})
}

func (s *Server) serveRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !runID.MatchString(id) {
		http.Error(w, "no such run", http.StatusNotFound)
		return
	}
	run, err := readRun(filepath.Join(s.cfg.RunsDir, id), id)
	s.serveRead(w, run, err, "run "+id, "no such run", "this run's record cannot be read")
}

func (s *Server) serveRunFile(w http.ResponseWriter, r *http.Request) {
	id, name := r.PathValue("id"), r.PathValue("file")
	if !runID.MatchString(id) || !shotFile.MatchString(name) {
		http.Error(w, "no such file", http.StatusNotFound)
		return
	}
	f, fi, err := openRecordFile(s.cfg.RunsDir, id, name)
	s.servePNG(w, r, f, fi, err, "run "+id)
}

// serveRead answers v, read from a record with err, as JSON. What does not
// exist is noSuch (404); what cannot be read is unreadable (500), and the
// console logs why, about naming the record.
func (s *Server) serveRead(w http.ResponseWriter, v any, err error, about, noSuch, unreadable string) {
	switch {
	case errors.Is(err, os.ErrNotExist):
		http.Error(w, noSuch, http.StatusNotFound)
	case err != nil:
		s.cfg.Logf("console: %s: %v", about, err)
		http.Error(w, unreadable, http.StatusInternalServerError)
	default:
		writeJSON(w, v)
	}
}

// servePNG serves a record's screenshot f, opened with err. One that cannot
// be opened is "no such file" either way: a request may not tell a missing
// file from one it may not read; the console logs the latter, about naming
// the record.
func (s *Server) servePNG(w http.ResponseWriter, r *http.Request, f *os.File, fi fs.FileInfo, err error, about string) {
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.cfg.Logf("console: %s: %v", about, err)
		}
		http.Error(w, "no such file", http.StatusNotFound)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "image/png")
	http.ServeContent(w, r, fi.Name(), fi.ModTime(), f)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
