package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/remote"
)

// conformanceCheck is one line of `kvtwin adapter check`.
type conformanceCheck struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
}

func newAdapterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "adapter",
		Short: "Tools for adapters that put outside implementations under audit (docs/adapters.md)",
	}
	var target string
	var timeout time.Duration
	var asJSON bool
	check := &cobra.Command{
		Use:   "check --impl TARGET",
		Short: "Check that an adapter speaks the protocol of docs/adapters.md",
		Long: `check exercises an adapter's protocol, not its answers (kvtwin audit judges those): the op
list; an answer to each declared op's sample input; an error object, with a code and a message,
for an invalid input; not_implemented (HTTP 404) for an op it lacks; a malformed request
answered or survived; 32 pipelined calls all answered within --timeout; and, over exec, an exit
within 2 s of stdin closing. Exit status 1 when a check fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !remote.IsTarget(target) {
				return fmt.Errorf("--impl %q: want exec:CMD ARGS… or http://HOST:PORT[/PREFIX]", target)
			}
			if timeout <= 0 {
				return fmt.Errorf("--timeout %s: want > 0", timeout)
			}
			checks := checkAdapter(target, timeout)
			return reportConformance(cmd.OutOrStdout(), target, checks, asJSON)
		},
	}
	check.Flags().StringVar(&target, "impl", "", "the adapter: exec:CMD ARGS… or http://HOST:PORT[/PREFIX]")
	check.Flags().DurationVar(&timeout, "timeout", remote.DefaultTimeout, "per-call timeout")
	check.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	_ = check.MarkFlagRequired("impl")
	cmd.AddCommand(check)
	return cmd
}

func reportConformance(w io.Writer, target string, checks []conformanceCheck, asJSON bool) error {
	passed := true
	for _, c := range checks {
		passed = passed && c.Passed
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"impl": target, "passed": passed, "checks": checks}); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
		for _, c := range checks {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, verdict(c.Passed, "pass", "FAIL"), c.Detail)
		}
		tw.Flush()
		fmt.Fprintf(w, "\nadapter %s: %s\n", verdict(passed, "conforms", "DOES NOT CONFORM"), target)
	}
	if !passed {
		return &exitError{code: 1, msg: "adapter check failed"}
	}
	return nil
}

// checkAdapter runs every conformance check against target.
func checkAdapter(target string, timeout time.Duration) []conformanceCheck {
	var checks []conformanceCheck
	add := func(name string, err error, detail string) {
		c := conformanceCheck{Name: name, Passed: err == nil, Detail: detail}
		if err != nil {
			c.Detail = err.Error()
		}
		checks = append(checks, c)
	}
	r, err := remote.Open(target, remote.Options{Timeout: timeout})
	if err != nil {
		add("start", err, "")
		return checks
	}
	defer r.Close()
	ops, err := r.Ops()
	if err != nil {
		add("op list", err, "")
		return checks
	}
	known, err := knownOps(ops)
	switch {
	case err != nil:
		add("op list", err, "")
		return checks
	case len(known) == 0:
		add("op list", fmt.Errorf("declares %d ops, none of them kvtwin's: %v", len(ops), remote.Names(ops)), "")
		return checks
	}
	add("op list", nil, fmt.Sprintf("%d ops declared, %d of them kvtwin's", len(ops), len(known)))
	add("sample inputs", forEachOp(known, func(s equiv.Suite) error {
		_, err := r.Run(s.Name(), s.Sample())
		return err
	}), fmt.Sprintf("each of %d ops answered its sample", len(known)))
	add("error objects", forEachOp(known, func(s equiv.Suite) error { return checkErrorObject(r, s) }),
		"each op rejected an invalid input with an error object carrying a code and a message")
	_, err = r.Run("kvtwin.no_such_op", []byte("{}"))
	if errors.Is(err, remote.ErrNotImplemented) {
		err = nil
	} else if err == nil {
		err = errors.New("an unknown op was answered, not refused as not implemented")
	}
	add("not implemented", err, "an unknown op is refused as not_implemented (HTTP 404)")
	add("pipelining", checkPipelining(r, known[0]), fmt.Sprintf("32 concurrent calls answered within %s each", timeout))
	if strings.HasPrefix(target, "exec:") {
		add("malformed request", checkExecMalformed(target, known[0], timeout), "a line that is not a request is skipped and the next call answered")
		add("exit on end of input", checkExecExit(target), "the adapter exits within 2s of stdin closing")
	} else {
		add("malformed request", checkHTTPMalformed(target, known[0], timeout), "a body that is not JSON is answered 400 with a detail object")
	}
	return checks
}

// knownOps is the suites of the listed ops kvtwin has, in the listing's
// order, each restricted to the part its listing declares (so its sample
// and invalid input lie inside it); a declaration that names what its op
// lacks is an error.
func knownOps(ops []remote.Listed) ([]equiv.Suite, error) {
	restricted, _, err := declaredSuites(ops)
	if err != nil {
		return nil, err
	}
	var known []equiv.Suite
	for _, l := range ops {
		if s, ok := restricted[l.Name]; ok {
			known = append(known, s)
			delete(restricted, l.Name)
		}
	}
	return known, nil
}

// declared is s restricted to what its listing l declares
// (docs/adapters.md "Partial declarations"), and what that leaves out.
func declared(s equiv.Suite, l remote.Listed) (equiv.Suite, equiv.Restriction, error) {
	return s.Restrict(equiv.Declaration{Steps: l.Steps, Options: l.Options})
}

func forEachOp(ss []equiv.Suite, f func(equiv.Suite) error) error {
	var errs []error
	for _, s := range ss {
		if err := f(s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name(), err))
		}
	}
	return errors.Join(errs...)
}

func checkErrorObject(r remote.Impl, s equiv.Suite) error {
	in, _ := s.InvalidInput(0)
	res, err := r.Run(s.Name(), in)
	if err != nil {
		return err
	}
	if !res.Rejected {
		return fmt.Errorf("accepted the invalid input %s", in)
	}
	var obj struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(res.Bytes, &obj); err != nil || obj.Code == "" || obj.Message == "" {
		return fmt.Errorf("error object without a code and a message: %s", res.Bytes)
	}
	return nil
}

func checkPipelining(r remote.Impl, s equiv.Suite) error {
	var wg sync.WaitGroup
	errs := make([]error, 32)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = r.Run(s.Name(), s.Sample())
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// rawAdapter starts an exec adapter outside package remote, for the checks
// that must write what the protocol forbids; the end of its stderr is kept
// in tail.
func rawAdapter(target string) (cmd *exec.Cmd, stdin io.WriteCloser, stdout *bufio.Reader, tail *stderrTail, err error) {
	argv, err := remote.ExecArgv(target)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	cmd = exec.Command(argv[0], argv[1:]...)
	tail = &stderrTail{}
	cmd.Stderr = tail
	if stdin, err = cmd.StdinPipe(); err != nil {
		return nil, nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, nil, err
	}
	return cmd, stdin, bufio.NewReader(io.LimitReader(out, remote.DefaultMaxReplyBytes)), tail, nil
}

// stderrTailBytes is how much of a raw adapter's stderr a check keeps: the
// end of a traceback.
const stderrTailBytes = 2 << 10

// stderrTail keeps the last stderrTailBytes an adapter wrote to stderr.
type stderrTail struct {
	mu sync.Mutex
	b  []byte
}

// Write implements io.Writer, keeping the end.
func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - stderrTailBytes; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// String is the kept stderr, quoted, or "(nothing)".
func (t *stderrTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := strings.TrimSpace(string(t.b)); s != "" {
		return strconv.Quote(s)
	}
	return "(nothing)"
}

// deadAdapter describes an adapter whose stdout ended before an answer:
// how it exited (waiting up to a second) and the end of its stderr.
func deadAdapter(cmd *exec.Cmd, tail *stderrTail, when string) error {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	status := "its stdout closed, the process still running after 1s (killed)"
	select {
	case err := <-exited:
		status = "exited 0"
		if err != nil {
			status = err.Error()
		}
	case <-time.After(time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	return fmt.Errorf("the adapter ended its output %s (%s); the end of its stderr: %s", when, status, tail)
}

func checkExecMalformed(target string, s equiv.Suite, timeout time.Duration) error {
	cmd, stdin, stdout, tail, err := rawAdapter(target)
	if err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	req, _ := json.Marshal(map[string]any{"id": 7, "op": s.Name(), "in": s.Sample()})
	if _, err := fmt.Fprintf(stdin, "this is not a request\n{\"id\":\"x\"}\n%s\n", req); err != nil {
		return err
	}
	line := make(chan []byte, 1)
	go func() {
		b, _ := stdout.ReadBytes('\n')
		line <- b
	}()
	select {
	case b := <-line:
		if len(b) == 0 {
			return deadAdapter(cmd, tail, "after the malformed lines, without answering id 7")
		}
		var rep struct {
			ID uint64 `json:"id"`
		}
		if json.Unmarshal(b, &rep) != nil || rep.ID != 7 {
			return fmt.Errorf("after malformed lines the first reply was %.200q, want the reply to id 7", b)
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("no reply within %s after malformed lines", timeout)
	}
}

func checkExecExit(target string) error {
	cmd, stdin, _, _, err := rawAdapter(target)
	if err != nil {
		return err
	}
	_ = stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("exited with %v after stdin closed", err)
		}
		return nil
	case <-time.After(2 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return errors.New("still running 2s after stdin closed")
	}
}

func checkHTTPMalformed(target string, s equiv.Suite, timeout time.Duration) error {
	client := &http.Client{Timeout: timeout}
	resp, err := client.Post(strings.TrimRight(target, "/")+"/v1/ops/"+s.Name(), "application/json", bytes.NewReader([]byte("{not json")))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var b struct {
		Detail struct {
			Code string `json:"code"`
		} `json:"detail"`
	}
	if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(body, &b) != nil || b.Detail.Code == "" {
		return fmt.Errorf("HTTP %d %.200s, want 400 with a detail object", resp.StatusCode, body)
	}
	return nil
}
