package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/console"
	"github.com/agentd-dev/agentd/runner"
)

// With --console and no terminal, a safety check is answered in the page:
// its answer is the approval, and the record notes who gave it.
func TestConsoleApprovalsThroughThePage(t *testing.T) {
	dir := t.TempDir()
	srv, err := console.Start(console.Config{RunsDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rec, err := runner.CreateRecord(filepath.Join(dir, "r"))
	if err != nil {
		t.Fatal(err)
	}
	approve := consoleApprovals(srv, nil, false, rec, io.Discard).SafetyChecks

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	if r, err := c.Get(srv.URL()); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("sign in: %v %v", r, err)
	}
	for _, answer := range []string{"deny", "approve"} {
		got := make(chan any, 1)
		go func() {
			v, err := approve(context.Background(), runner.CallInfo{CallID: "call_1", Actions: []actions.Action{{Type: actions.Click, X: 1, Y: 2}}},
				[]runner.SafetyCheck{{ID: "sc", Code: "irrelevant_domain", Message: "m"}})
			if err != nil {
				v = err
			}
			got <- v
		}()
		var id string
		for deadline := time.Now().Add(10 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			r, err := c.Get(srv.Base() + "/api/questions")
			if err != nil {
				t.Fatal(err)
			}
			var qs struct{ Questions []console.Question }
			json.NewDecoder(r.Body).Decode(&qs)
			r.Body.Close()
			if len(qs.Questions) == 1 {
				id = qs.Questions[0].ID
				if a := qs.Questions[0].Actions; len(a) != 1 || a[0] != "click left (1,2)" {
					t.Fatalf("question actions %q", a)
				}
			}
		}
		req, _ := http.NewRequest(http.MethodPost, srv.Base()+"/api/questions/"+id, strings.NewReader(answer))
		req.Header.Set("Origin", "http://"+srv.Addr())
		if r, err := c.Do(req); err != nil || r.StatusCode != http.StatusNoContent {
			t.Fatalf("answer: %v %v", r, err)
		}
		if v := <-got; v != (answer == "approve") {
			t.Fatalf("%s: the callback returned %v", answer, v)
		}
	}
	if err := rec.Finish(nil, nil); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "r", "events.jsonl"))
	if n := strings.Count(string(data), `"by":"the console"`); n != 2 {
		t.Fatalf("%d approval_by notes naming the console:\n%s", n, data)
	}
}

// --confirm asks before each computer action; the other modes are refused
// before anything starts.
func TestRunConfirmIsForComputerMode(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "test")
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, mode := range []string{"code", "browser"} {
		err := runCommand(context.Background(), []string{"--guest", "127.0.0.1:1", "--mode", mode, "--confirm", "task"}, null, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--confirm is for --mode computer") {
			t.Fatalf("--mode %s --confirm: %v", mode, err)
		}
	}
}
