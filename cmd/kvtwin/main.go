// Command kvtwin is the one binary: it serves, audits, benchmarks and replays
// kvtwin's catalog of KV-cache algorithms. Its commands are `kvtwin serve`,
// `kvtwin audit`, `kvtwin fixtures gen|check`,
// `kvtwin bench`, `kvtwin bugzoo`, `kvtwin replay` (a request trace through the
// radix prefix cache) and `kvtwin warmup-plan` (the DeepGEMM warmup plan). Run
// `kvtwin help` for the flags of each.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/spf13/cobra"
)

// exitError carries a process exit code out of a command without printing
// usage; commands return it when they ran but found failures.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func main() {
	initTestingFlags()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// initTestingFlags readies Go's testing machinery for use outside `go
// test`: audit and bench run it (rapid, testing.Benchmark), testing.Init
// registers the flags they consult, and parsing the empty command line
// marks those flags parsed, without which rapid's call to testing.Short
// panics the moment a check fails. Commands set the flags they need with
// flag.Set; cobra parses the real command line.
func initTestingFlags() {
	testing.Init()
	if err := flag.CommandLine.Parse(nil); err != nil {
		panic(err) // unreachable: an empty command line always parses
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintln(stderr, "kvtwin:", ee.msg)
		}
		return ee.code
	default:
		fmt.Fprintln(stderr, "kvtwin:", err)
		return 2
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "kvtwin",
		Short:         "Reference and fast twins of LLM KV-cache algorithms, checked byte for byte",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newServeCmd(), newAuditCmd(), newFixturesCmd(), newBenchCmd(), newBugzooCmd(), newReplayCmd(), newWarmupPlanCmd(), newSoakCmd(), newAdapterCmd(), newEventsCmd())
	return root
}
