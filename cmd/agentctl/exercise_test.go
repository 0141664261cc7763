package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/tools/exercise"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// Without OPENAI_API_KEY, --live fails before a guest starts: the key is
// named even for a backend this machine may not have.
func TestExerciseLiveNeedsKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	err := runExercise(context.Background(), []string{"--live", "--guest", "vm", "--record-dir", t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("err = %v", err)
	}
	if err := runExercise(context.Background(), []string{"--model", "m"}); err == nil || !strings.Contains(err.Error(), "--live") {
		t.Fatalf("--model without --live: %v", err)
	}
}

// liveExercise runs `agentctl exercise --live` on a local guest against
// respserver posing as the API through OPENAI_BASE_URL.
func liveExercise(t *testing.T, turns []respserver.Turn) (*respserver.Server, error) {
	prereq.Programs(t, prereq.X, "Xvfb", "openbox", "firefox-esr", "mousepad")
	prereq.Full(t, "starting Firefox")
	model, url := respserver.Start(turns...)
	t.Cleanup(model.Close)
	t.Setenv("OPENAI_BASE_URL", url)
	t.Setenv("OPENAI_API_KEY", secretKey)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := runExercise(ctx, []string{"--live", "--model", "posing-model", "--guest", "local", "--record-dir", t.TempDir(), "--agentd", agentdtest.Binary(t)})
	for _, r := range model.Requests() {
		if !bytes.Contains(r.Body, []byte(`"model":"posing-model"`)) {
			t.Errorf("request for turn %d is not for --model: %.200s", r.Turn, r.Body)
		}
	}
	return model, err
}

// A model that does the task: the live path passes the same verification
// as the scripted exercise, and the API saw no bad request.
func TestExerciseLive(t *testing.T) {
	turns, err := exercise.Script()
	if err != nil {
		t.Fatal(err)
	}
	model, err := liveExercise(t, turns)
	if err != nil {
		t.Fatal(err)
	}
	if err := model.Err(); err != nil {
		t.Fatal(err)
	}
	if got := len(model.Requests()); got != len(turns) {
		t.Fatalf("%d requests, want %d", got, len(turns))
	}
}

// A model that never submits the form and says it did: the verification
// reads the form's server and fails, naming the missing record.
func TestExerciseLiveModelClaimsSuccess(t *testing.T) {
	turns, err := exercise.Script()
	if err != nil {
		t.Fatal(err)
	}
	// Drop the submitting turn; the last turn still claims success.
	turns = append(turns[:2:2], turns[3:]...)
	if !strings.Contains(turns[len(turns)-1].Message, "booked") {
		t.Fatalf("the final message does not claim success: %q", turns[len(turns)-1].Message)
	}
	_, err = liveExercise(t, turns)
	if err == nil || !strings.Contains(err.Error(), "want exactly 1 record, found 0") {
		t.Fatalf("err = %v, want the missing record named", err)
	}
	if strings.Contains(err.Error(), "saved note") {
		t.Errorf("the saved note was reported wrong: %v", err)
	}
}
