package console

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/agentd-dev/agentd/internal/randhex"
)

// Question is an approval a run waits for, shown in the page with the
// call's actions (in short: typed text by its length only).
type Question struct {
	ID      string   `json:"id"`
	Kind    string   `json:"kind"`
	CallID  string   `json:"call_id"`
	Actions []string `json:"actions,omitempty"`
	Checks  []string `json:"checks,omitempty"`
	// Shot is the record's screenshot the actions refer to, if known.
	Shot string `json:"shot,omitempty"`
}

// questions are the approvals waiting for an answer from the page.
type questions struct {
	mu      sync.Mutex
	pending []*question
}

type question struct {
	Question
	answer chan bool // receives the one answer the page gives
}

// ErrNotAnswered is Ask's error when the question was withdrawn (its
// context ended) before the page answered.
var ErrNotAnswered = errors.New("console: the question was not answered in the page")

// Ask shows q in the page and waits for a person's answer there: true
// only for "Approve". Nothing else answers: a page that is closed or
// disconnected leaves the question waiting until ctx ends (fail closed).
// Ending ctx withdraws the question, so a later click answers nothing.
func (s *Server) Ask(ctx context.Context, q Question) (bool, error) {
	q.ID = randhex.String(8)
	qq := &question{Question: q, answer: make(chan bool, 1)}
	s.questions.mu.Lock()
	s.questions.pending = append(s.questions.pending, qq)
	s.questions.mu.Unlock()
	defer s.withdraw(qq)
	select {
	case ok := <-qq.answer:
		return ok, nil
	case <-ctx.Done():
		return false, errors.Join(ErrNotAnswered, ctx.Err())
	}
}

func (s *Server) withdraw(q *question) {
	s.questions.mu.Lock()
	defer s.questions.mu.Unlock()
	s.questions.pending = slices.DeleteFunc(s.questions.pending, func(p *question) bool { return p == q })
}

func (s *Server) serveQuestions(w http.ResponseWriter, r *http.Request) {
	s.questions.mu.Lock()
	list := make([]Question, len(s.questions.pending))
	for i, q := range s.questions.pending {
		list[i] = q.Question
	}
	s.questions.mu.Unlock()
	writeJSON(w, struct {
		Questions []Question `json:"questions"`
	}{list})
}

// serveAnswer takes the page's answer, "approve" or "deny", to a pending
// question. The first answer wins; a question already answered, or
// withdrawn, takes none.
func (s *Server) serveAnswer(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64))
	if err != nil {
		http.Error(w, "unreadable answer", http.StatusBadRequest)
		return
	}
	var approve bool
	switch strings.TrimSpace(string(body)) {
	case "approve":
		approve = true
	case "deny":
	default:
		http.Error(w, `the answer is "approve" or "deny"`, http.StatusBadRequest)
		return
	}
	id := r.PathValue("id")
	s.questions.mu.Lock()
	i := slices.IndexFunc(s.questions.pending, func(q *question) bool { return q.ID == id })
	var q *question
	if i >= 0 {
		q = s.questions.pending[i]
		s.questions.pending = slices.Delete(s.questions.pending, i, i+1)
	}
	s.questions.mu.Unlock()
	if q == nil {
		http.Error(w, "this question was already answered or is no longer asked", http.StatusConflict)
		return
	}
	q.answer <- approve
	w.WriteHeader(http.StatusNoContent)
}
