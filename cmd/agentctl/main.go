// Command agentctl drives agentd guests from the host: it runs the Responses
// API computer loop, manages guests, and performs single actions by hand.
// Each subcommand lives in its own file; the table commands lists them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
)

// command is one agentctl subcommand.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string) error
}

// commands are agentctl's subcommands, in the order help lists them.
var commands = []command{
	{"act", "perform actions on a guest (JSON action or array) and print the results", runAct},
	{"bench", "measure agentd against scrot, import, xdotool, kbinani and robotgo on a local guest", runBench},
	{"console", "serve the console page: the desktop live, the steps of each run", runConsole},
	{"eval", "run a suite of desktop tasks in fresh guests, judged by checkers that read the guest (docs/eval.md)", runEval},
	{"exec", "run Python (pyautogui, log, display) in a guest started with --code", runExec},
	{"exercise", "run the exercise: a scripted model (or with --live a real one) books a pickup and saves a note", runExercise},
	{"guest", "start, stop or show a guest desktop", runGuest},
	{"mcp", "serve a guest desktop to MCP clients (stdio, or Streamable HTTP on loopback)", runMCP},
	{"run", "run a task on a guest with the OpenAI computer tool", runRun},
	{"screenshot", "save a screenshot of a guest as PNG", runScreenshot},
}

// flagSet is the flags of "agentctl NAME". usage, unless "", is what -h or
// a wrong flag prints above the flags: the command line and what the
// command does. -h makes Parse return flag.ErrHelp, which main takes for
// success.
func flagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet("agentctl "+name, flag.ContinueOnError)
	if usage != "" {
		fs.Usage = func() {
			fmt.Fprintln(fs.Output(), usage)
			fs.PrintDefaults()
		}
	}
	return fs
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: agentctl <command> [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'agentctl <command> -h' for a command's flags.")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		os.Exit(2)
	}
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == os.Args[1] })
	if i < 0 {
		fmt.Fprintf(os.Stderr, "agentctl: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := commands[i].run(ctx, os.Args[2:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "agentctl %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
