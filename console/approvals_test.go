package console

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// answerInPage posts the page's answer to question id, as the page does.
func answerInPage(s *Server, id, word string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/api/questions/"+id, strings.NewReader(word))
	r.SetPathValue("id", id)
	w := httptest.NewRecorder()
	s.serveAnswer(w, r)
	return w
}

// waitPending is the id of the one question posted.
func waitPending(t *testing.T, s *Server) string {
	t.Helper()
	for {
		if ids := s.pendingIDs(); len(ids) == 1 {
			return ids[0]
		}
		runtime.Gosched()
	}
}

// The page's answer racing the terminal's, and racing a withdrawal: in
// every round exactly one of them ends the question, the page is told
// the truth (204 only when its answer is the one the run got), and an
// answer to a question that ended never reaches the next one. Run with
// -race.
func TestAnswerRacesWithdrawAndTerminal(t *testing.T) {
	s := startConsole(t, Config{RunsDir: t.TempDir()})
	const rounds = 300
	var prev string
	for i := range rounds {
		ctx, cancel := context.WithCancel(context.Background())
		terminal := i%2 == 0
		release := make(chan struct{})
		var term func(context.Context) (bool, error)
		if terminal {
			term = func(ctx context.Context) (bool, error) {
				select {
				case <-release:
					return false, nil // the terminal refuses
				case <-ctx.Done():
					return false, ctx.Err()
				}
			}
		}
		type result struct {
			a   Answer
			err error
		}
		res := make(chan result, 1)
		go func() {
			a, err := s.AskBoth(ctx, Question{Kind: "before_action", CallID: "call"}, term)
			res <- result{a, err}
		}()
		id := waitPending(t, s)
		if id == prev {
			t.Fatal("two questions got the same id")
		}
		// A late answer to the previous question answers nothing now.
		if prev != "" {
			if w := answerInPage(s, prev, "approve"); w.Code != http.StatusConflict {
				t.Fatalf("round %d: an answer to the previous question: HTTP %d", i, w.Code)
			}
		}
		var wg sync.WaitGroup
		var page *httptest.ResponseRecorder
		wg.Go(func() { page = answerInPage(s, id, "approve") })
		wg.Go(func() {
			if terminal {
				close(release)
			} else {
				cancel()
			}
		})
		wg.Wait()
		r := <-res
		cancel()
		switch {
		case page.Code == http.StatusNoContent:
			if r.err != nil || r.a != (Answer{Approved: true, By: ByPage}) {
				t.Fatalf("round %d: the page was told its answer counted, the run got %+v, %v", i, r.a, r.err)
			}
		case page.Code == http.StatusConflict && terminal:
			if r.err != nil || r.a != (Answer{Approved: false, By: ByTerminal}) {
				t.Fatalf("round %d: the page was told it lost to the terminal, the run got %+v, %v", i, r.a, r.err)
			}
			if !strings.Contains(page.Body.String(), "already refused in the terminal") {
				t.Fatalf("round %d: the page was told %q", i, page.Body.String())
			}
		case page.Code == http.StatusConflict:
			if !errors.Is(r.err, ErrNotAnswered) {
				t.Fatalf("round %d: the page was told the question was withdrawn, the run got %+v, %v", i, r.a, r.err)
			}
		default:
			t.Fatalf("round %d: HTTP %d %s", i, page.Code, page.Body.String())
		}
		if ids := s.pendingIDs(); len(ids) != 0 {
			t.Fatalf("round %d: still pending: %v", i, ids)
		}
		prev = id
	}
}

// The terminal answering first withdraws nothing it should not: the page
// learns who answered from the settled list; a terminal that fails (no
// terminal, end of input) leaves the page to answer.
func TestTerminalFirstAndTerminalFailing(t *testing.T) {
	s := startConsole(t, Config{RunsDir: t.TempDir()})
	a, err := s.AskBoth(context.Background(), Question{CallID: "c1"}, func(context.Context) (bool, error) { return true, nil })
	if err != nil || a != (Answer{Approved: true, By: ByTerminal}) {
		t.Fatalf("terminal answer: %+v %v", a, err)
	}
	s.questions.mu.Lock()
	settled := s.questions.settled[len(s.questions.settled)-1]
	s.questions.mu.Unlock()
	if settled.CallID != "c1" || settled.By != ByTerminal || !settled.Approved {
		t.Fatalf("settled %+v", settled)
	}
	res := make(chan Answer, 1)
	go func() {
		a, _ := s.AskBoth(context.Background(), Question{CallID: "c2"}, func(context.Context) (bool, error) { return false, errors.New("no answer: end of input") })
		res <- a
	}()
	id := waitPending(t, s)
	if w := answerInPage(s, id, "deny"); w.Code != http.StatusNoContent {
		t.Fatalf("HTTP %d", w.Code)
	}
	if a := <-res; a != (Answer{Approved: false, By: ByPage}) {
		t.Fatalf("got %+v", a)
	}
}
