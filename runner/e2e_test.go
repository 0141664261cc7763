//go:build linux

package runner_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
	"github.com/agentd-dev/agentd/respserver"
	"github.com/agentd-dev/agentd/runner"
)

const e2eToken = "runner-e2e-token-0123456789abcdef"

// TestServerToolFailureNothingReachesTheDesktop: on a real desktop (agentd
// on Xvfb, an X client recording every input event), a response whose
// server tool result failed or is still in progress stops before its
// computer call: the desktop receives nothing. With the result completed,
// the same response clicks.
func TestServerToolFailureNothingReachesTheDesktop(t *testing.T) {
	bin := agentdtest.Binary(t)
	for _, status := range []string{"failed", "in_progress", "completed"} {
		t.Run(status, func(t *testing.T) {
			x := xvfbtest.Start(t, 640, 400)
			rec := xrecorder.Start(t, x.Display)
			addrFile := filepath.Join(t.TempDir(), "addr")
			cmd := exec.Command(bin, "--display", x.Display, "--listen", "127.0.0.1:0", "--addr-file", addrFile)
			cmd.Env = append(os.Environ(), "AGENTD_TOKEN="+e2eToken)
			addr, _ := agentdtest.Start(t, cmd, addrFile, 20*time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := guest.Dial(ctx, addr, e2eToken)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()

			srv, url := respserver.Start(respserver.Call(`{"type":"screenshot"}`),
				respserver.Items(respserver.ComputerCall(`{"type":"click","x":320,"y":200}`, `{"type":"keypress","keys":["a"]}`),
					respserver.ServerItem("web_search_call", status, nil)),
				respserver.Final("done"))
			defer srv.Close()
			ts := runner.New(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-test")), c)
			defer ts.Close()
			search, err := runner.ServerTool(responses.ToolUnionParam{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}})
			if err != nil {
				t.Fatal(err)
			}
			rec.Clear()
			_, err = ts.Run(ctx, runner.RunOptions{Model: "m", Input: "search, then click", Tools: []runner.Tool{search}})
			if err := srv.Err(); err != nil {
				t.Fatal(err)
			}
			if status == "completed" {
				if err != nil {
					t.Fatal(err)
				}
				rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonPress }, 5*time.Second)
				return
			}
			if err == nil {
				t.Fatal("the run went on past a server tool result that is not completed")
			}
			rec.Sync(t)
			if evs := rec.Events(); len(evs) != 0 {
				t.Fatalf("the desktop received %v", evs)
			}
		})
	}
}
