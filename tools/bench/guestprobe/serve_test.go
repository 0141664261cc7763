package guestprobe

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/tools/bench/probe"
)

func TestServe(t *testing.T) {
	probes := map[string]Func{
		"ok":   func(context.Context) (int, error) { return 42, nil },
		"bad":  func(context.Context) (int, error) { return 0, errors.New("no display") },
		"heap": func(context.Context) (int, error) { _ = make([]byte, 1<<20); return 0, nil },
	}
	in := strings.NewReader(`{"probe":"ok"}
{"probe":"bad"}
{"probe":"nope"}
{"probe":"heap","allocs":4}
not json
`)
	var out strings.Builder
	if err := Serve(context.Background(), in, &out, probes, map[string]string{probe.RobotgoPNG: "no cgo"}); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	var hello probe.Hello
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &hello) != nil {
		t.Fatalf("no hello in %q", out.String())
	}
	if strings.Join(hello.Probes, ",") != "bad,heap,ok" || hello.Unavailable[probe.RobotgoPNG] != "no cgo" {
		t.Errorf("hello %+v", hello)
	}
	var reps []probe.Reply
	for sc.Scan() {
		var r probe.Reply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		reps = append(reps, r)
	}
	if len(reps) != 5 {
		t.Fatalf("%d replies, want one per request: %q", len(reps), out.String())
	}
	if reps[0].Bytes != 42 || reps[0].NS <= 0 || reps[0].Err != "" {
		t.Errorf("ok: %+v", reps[0])
	}
	if reps[1].Err != "no display" {
		t.Errorf("bad: %+v", reps[1])
	}
	if !strings.Contains(reps[2].Err, `unknown probe "nope"`) {
		t.Errorf("unknown: %+v", reps[2])
	}
	if reps[3].AllocBytes < 1<<20 || reps[3].Allocs < 1 {
		t.Errorf("allocs of a 1 MiB allocation per run: %+v", reps[3])
	}
	if !strings.Contains(reps[4].Err, "bad request") {
		t.Errorf("not json: %+v", reps[4])
	}
}
