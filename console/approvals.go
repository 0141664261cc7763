package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/internal/randhex"
	"github.com/agentd-dev/agentd/runner"
)

// Who answered a question.
const (
	ByPage     = "the console"
	ByTerminal = "the terminal"
)

// Question is an approval a run waits for, shown in the page with the
// call's actions (in short: typed text by its length only), drawn on the
// screenshot they refer to.
type Question struct {
	ID      string   `json:"id"`
	Kind    string   `json:"kind"`
	CallID  string   `json:"call_id"`
	Actions []string `json:"actions,omitempty"`
	// Marks are how Actions are drawn (one each, nil for none).
	Marks  []*Mark  `json:"marks,omitempty"`
	Checks []string `json:"checks,omitempty"`
	// Index is the action asked about (before_action; len(Actions) for
	// the final screenshot); -1 asks about the whole call.
	Index   int    `json:"index"`
	Summary string `json:"summary,omitempty"`
	// Detail is the whole question as text, when the call is no list of
	// computer actions (an MCP client's exec_py code, a browser call).
	Detail string `json:"detail,omitempty"`
	// Run and Shot are the record's screenshot the actions refer to: the
	// last one of the current run when the question is asked.
	Run  string `json:"run,omitempty"`
	Shot *Shot  `json:"shot,omitempty"`
}

// Answer is a question's one answer and who gave it.
type Answer struct {
	Approved bool
	By       string
}

// Settled is how a question left the page: answered (by whom) or
// withdrawn. The page shows it for the questions it showed.
type Settled struct {
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	By        string `json:"by,omitempty"`
	Approved  bool   `json:"approved"`
	Withdrawn bool   `json:"withdrawn,omitempty"`
	// Why is why a question was withdrawn, when the run said so (a person
	// took the desktop over, the run ended).
	Why string `json:"why,omitempty"`
}

// keepSettled is how many settled questions the page can still be told
// about.
const keepSettled = 32

// questions are the approvals waiting for an answer. Every way a question
// ends — the page's answer, the terminal's, withdrawal — goes through
// settle under mu: exactly one of them ends it, and an answer names its
// question by id, so it can never apply to another one.
type questions struct {
	mu      sync.Mutex
	pending []*question
	settled []Settled
}

type question struct {
	Question
	answer chan Answer // buffered 1: receives the winning answer
}

// ErrNotAnswered is Ask's error when the question was withdrawn (its
// context ended) before anyone answered.
var ErrNotAnswered = errors.New("console: the question was not answered")

// post shows q in the page under a fresh id, with the current run's last
// screenshot when q names none.
func (s *Server) post(q Question) *question {
	q.ID = randhex.String(8)
	if q.Shot == nil && s.cfg.CurrentRun != "" {
		if run, err := readRun(filepath.Join(s.cfg.RunsDir, s.cfg.CurrentRun), s.cfg.CurrentRun); err == nil {
			q.Run, q.Shot = run.ID, lastShot(run)
		}
	}
	qq := &question{Question: q, answer: make(chan Answer, 1)}
	s.questions.mu.Lock()
	s.questions.pending = append(s.questions.pending, qq)
	s.questions.mu.Unlock()
	return qq
}

// lastShot is the last screenshot a run's record holds.
func lastShot(run *Run) *Shot {
	for i := len(run.StepList) - 1; i >= 0; i-- {
		st := run.StepList[i]
		for j := len(st.Screenshots) - 1; j >= 0; j-- {
			if st.Screenshots[j].File != "" {
				sh := st.Screenshots[j]
				return &sh
			}
		}
	}
	return nil
}

// settle ends the pending question id with a (nil: withdraws it, for why).
// Only the first call for an id wins (true); a loser gets how the question
// ended, if it is still known.
func (s *Server) settle(id string, a *Answer) (bool, *Settled) { return s.settleWhy(id, a, "") }

func (s *Server) settleWhy(id string, a *Answer, why string) (bool, *Settled) {
	s.questions.mu.Lock()
	defer s.questions.mu.Unlock()
	i := slices.IndexFunc(s.questions.pending, func(q *question) bool { return q.ID == id })
	if i < 0 {
		j := slices.IndexFunc(s.questions.settled, func(st Settled) bool { return st.ID == id })
		if j < 0 {
			return false, nil
		}
		st := s.questions.settled[j]
		return false, &st
	}
	q := s.questions.pending[i]
	s.questions.pending = slices.Delete(s.questions.pending, i, i+1)
	st := Settled{ID: id, CallID: q.CallID, Withdrawn: a == nil}
	if a == nil {
		st.Why = why
	}
	if a != nil {
		st.By, st.Approved = a.By, a.Approved
		q.answer <- *a // the one send: q is no longer pending
	}
	s.questions.settled = append(s.questions.settled, st)
	if n := len(s.questions.settled); n > keepSettled {
		s.questions.settled = slices.Delete(s.questions.settled, 0, n-keepSettled)
	}
	return true, nil
}

// Ask shows q in the page and waits for a person's answer there: true
// only for "Approve". Nothing else answers: a page that is closed or
// disconnected leaves the question waiting until ctx ends (fail closed).
// Ending ctx withdraws the question, so a later click answers nothing.
func (s *Server) Ask(ctx context.Context, q Question) (bool, error) {
	a, err := s.AskBoth(ctx, q, nil)
	return a.Approved, err
}

// AskBoth asks q in the page and, when term is set, through term too
// (the terminal, with its own context): the first answer wins. When the
// page wins, term's context ends (the terminal's prompt is withdrawn);
// when term wins, the page is told. A term that fails (no terminal, end
// of input) leaves the page to answer. An answer that settled the
// question before ctx ended stands; otherwise the question is withdrawn
// with ErrNotAnswered.
func (s *Server) AskBoth(ctx context.Context, q Question, term func(context.Context) (bool, error)) (Answer, error) {
	qq := s.post(q)
	tctx, cancel := context.WithCancel(ctx)
	termDone := make(chan struct{})
	defer func() { cancel(); <-termDone }()
	if term != nil {
		go func() {
			defer close(termDone)
			if ok, err := term(tctx); err == nil && tctx.Err() == nil {
				// Loses, and changes nothing, when the page answered first.
				s.settle(qq.ID, &Answer{Approved: ok, By: ByTerminal})
			}
		}()
	} else {
		close(termDone)
	}
	select {
	case a := <-qq.answer:
		return a, nil
	case <-ctx.Done():
		why := ""
		if cause := context.Cause(ctx); cause != ctx.Err() {
			why = cause.Error() // the run said why: the page says it too
		}
		if won, _ := s.settleWhy(qq.ID, nil, why); won {
			return Answer{}, errors.Join(ErrNotAnswered, ctx.Err())
		}
		return <-qq.answer, nil // settled just before: that answer stands
	}
}

func (s *Server) serveQuestions(w http.ResponseWriter, r *http.Request) {
	ended := s.polled(r.URL.Query().Get("page"), r.URL.Query().Get("ended") != "")
	s.questions.mu.Lock()
	list := make([]Question, len(s.questions.pending))
	for i, q := range s.questions.pending {
		list[i] = q.Question
	}
	settled := slices.Clone(s.questions.settled)
	s.questions.mu.Unlock()
	writeJSON(w, struct {
		Questions []Question `json:"questions"`
		Settled   []Settled  `json:"settled"`
		// Ended is how the run ended, once it has.
		Ended *Outcome `json:"ended,omitempty"`
	}{list, settled, ended})
}

// serveAnswer takes the page's answer, "approve" or "deny", to the pending
// question its URL names. The first answer wins; a question already
// answered (here or on the terminal), or withdrawn, takes none, and the
// page is told why.
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
	won, st := s.settle(r.PathValue("id"), &Answer{Approved: approve, By: ByPage})
	if !won {
		http.Error(w, settledText(st), http.StatusConflict)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// settledText tells the page why its answer came too late.
func settledText(st *Settled) string {
	switch {
	case st == nil:
		return "this question is no longer asked"
	case st.Withdrawn && st.Why != "":
		return "this question was withdrawn: " + st.Why
	case st.Withdrawn:
		return "this question was withdrawn: the run went on without it"
	case st.Approved:
		return "already approved in " + st.By
	default:
		return "already refused in " + st.By
	}
}

// Terminal asks the same questions on a terminal (runner.TerminalApprover).
type Terminal interface {
	ApproveSafetyChecks(ctx context.Context, call runner.CallInfo, checks []runner.SafetyCheck) (any, error)
	ApproveAction(ctx context.Context, a runner.ActionInfo) (any, error)
}

// Approvals answers a run's approvals (runner.CallOptions) in the page
// and, when Terminal is set, on the terminal too: the first answer wins.
type Approvals struct {
	Server   *Server
	Terminal Terminal
	// Answered, if set, is told each answer before the run goes on (agentctl
	// prints it and notes it in the run record).
	Answered func(q Question, a Answer)
}

// SafetyChecks fits runner.CallOptions.ApproveSafetyChecks.
func (ap Approvals) SafetyChecks(ctx context.Context, call runner.CallInfo, checks []runner.SafetyCheck) (any, error) {
	q := callQuestion(runner.ApprovalSafetyChecks, call.CallID, call.Actions, -1)
	for _, c := range checks {
		q.Checks = append(q.Checks, c.Code+": "+c.Message)
	}
	var term func(context.Context) (bool, error)
	if ap.Terminal != nil {
		term = func(ctx context.Context) (bool, error) {
			v, err := ap.Terminal.ApproveSafetyChecks(ctx, call, checks)
			return v == true, err
		}
	}
	return ap.ask(ctx, q, term)
}

// BeforeAction fits runner.CallOptions.BeforeAction.
func (ap Approvals) BeforeAction(ctx context.Context, info runner.ActionInfo) (any, error) {
	q := callQuestion(runner.ApprovalBeforeAction, info.CallID, info.Actions, info.Index)
	q.Summary = info.Action.String()
	if info.IsFinalScreenshot {
		q.Summary = "final screenshot"
	}
	var term func(context.Context) (bool, error)
	if ap.Terminal != nil {
		term = func(ctx context.Context) (bool, error) {
			v, err := ap.Terminal.ApproveAction(ctx, info)
			return v == true, err
		}
	}
	return ap.ask(ctx, q, term)
}

// Question asks q (a call that is no list of computer actions: its Kind,
// CallID, Summary and Detail) in the page and, when term is set, through
// term too: the first answer wins; true only for an approval.
func (ap Approvals) Question(ctx context.Context, q Question, term func(context.Context) (bool, error)) (bool, error) {
	v, err := ap.ask(ctx, q, term)
	return v == true, err
}

func (ap Approvals) ask(ctx context.Context, q Question, term func(context.Context) (bool, error)) (any, error) {
	a, err := ap.Server.AskBoth(ctx, q, term)
	if err != nil {
		return false, fmt.Errorf("asking %s for call %s: %w", q.Kind, q.CallID, err)
	}
	if ap.Answered != nil {
		ap.Answered(q, a)
	}
	return a.Approved, nil
}

// callQuestion shows a call's actions and how each is drawn.
func callQuestion(kind, callID string, as []actions.Action, index int) Question {
	q := Question{Kind: kind, CallID: callID, Index: index}
	for _, a := range as {
		q.Actions = append(q.Actions, a.String())
		m := markOf(a.String())
		if m != nil && a.Type == actions.Drag && len(a.Path) >= 2 {
			for _, p := range a.Path {
				m.Path = append(m.Path, Point{X: p.X, Y: p.Y})
			}
		}
		q.Marks = append(q.Marks, m)
	}
	return q
}
