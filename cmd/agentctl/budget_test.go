package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/tools/respserver"
)

// --context-images and --context-bytes make a local-history run whose
// requests keep within them; bad values are refused before anything runs.
func TestRunContextBudget(t *testing.T) {
	click := `{"type":"click","x":10,"y":10}`
	srv, _, dir := harness(t, respserver.Call(`{"type":"screenshot"}`), respserver.Call(click), respserver.Call(click),
		respserver.Call(click), respserver.Final("done"))
	var out bytes.Buffer
	err := runCommand(context.Background(), []string{"--guest", "127.0.0.1:7000", "--record-dir", dir,
		"--context-images", "1", "--context-bytes", "20000", "open the editor"}, devNull(t), &out, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs {
		var body struct {
			Store *bool `json:"store"`
		}
		_ = json.Unmarshal(r.Body, &body)
		if body.Store == nil || *body.Store || r.Input.Images > 1 || r.Input.Bytes > 20000 || !r.Input.Current {
			t.Errorf("request %d: store %v, input %+v", i+1, body.Store, r.Input)
		}
	}
	if last := reqs[len(reqs)-1].Input; last.Placeholders != 3 {
		t.Errorf("the last request has %d placeholders, want 3", last.Placeholders)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--context-images", "-1"}, "--context-images is -1"},
		{[]string{"--context-bytes", "-5"}, "--context-bytes is -5"},
		{[]string{"--context-images", "x"}, "invalid value"},
		{[]string{"--context-bytes", "10"}, "more than MaxInputBytes 10"},
	} {
		args := append([]string{"--guest", "127.0.0.1:7000", "--record-dir", t.TempDir()}, tc.args...)
		err := runCommand(context.Background(), append(args, "task"), devNull(t), &out, &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
	if n := len(srv.Requests()); n != 5 {
		t.Fatalf("a refused budget sent %d requests", n-5)
	}
}
