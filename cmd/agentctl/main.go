// Command agentctl drives agentd guests from the host: it runs the Responses
// API computer loop, manages guests, and performs single actions by hand.
// Each subcommand lives in its own file and registers itself here.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one agentctl subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string) error) {
	commands[name] = command{summary: summary, run: run}
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
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'agentctl <command> -h' for a command's flags.")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		os.Exit(2)
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "agentctl: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, os.Args[2:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "agentctl %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
