package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// This file drives scripts/kvev_publisher.py, the real KV-event publisher
// (python3-zmq and python3-msgpack: vLLM's PUB and replay ROUTER), as a
// child process of `kvtwin soak`. events/pypub does the same for tests,
// but it links `testing` and fails a testing.TB; the soak is production
// code of the CLI, so it has its own driver that returns errors instead.
// The protocol is the script's: one JSON command per stdin line, one JSON
// answer per stdout line, the endpoints on the first line.

// defaultPython is the interpreter the publisher needs: Debian's, where
// python3-zmq and python3-msgpack install (a pyenv or venv python3 on PATH
// usually lacks them).
const defaultPython = "/usr/bin/python3"

// publisherScript and auditExample are the repository files the soak runs,
// relative to the repository's root.
const (
	publisherScript = "scripts/kvev_publisher.py"
	auditExample    = "adapters/python/example.py"
)

// publisherAnswerTimeout is how long the publisher may take to answer one
// command. Commands are quick (an emit is a msgpack encode and a send); one
// that takes this long means the process is stuck, and the soak must not be.
const publisherAnswerTimeout = 30 * time.Second

// publisherExitTimeout is how long close waits for the process to exit
// after {"op":"exit"} and EOF before it kills it.
const publisherExitTimeout = 5 * time.Second

// maxPublisherLine bounds one answer line: an emit's answer echoes its
// payload in hex, and the soak's batches are far below this.
const maxPublisherLine = 4 << 20

// pyPublisher is one publisher process, driven by one goroutine at a time
// (do is not safe for concurrent use; close may follow from another
// goroutine once the driver has stopped).
type pyPublisher struct {
	// pub and replay are the PUB and ROUTER endpoints it bound.
	pub, replay string

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan publisherLine
	logs   *logRing // its stderr's last lines
	readWG sync.WaitGroup
	once   sync.Once
	err    error // close's result
}

// publisherLine is one stdout line, or why there are no more.
type publisherLine struct {
	text []byte
	err  error
}

// findRepoFile finds rel (a path inside the repository) from the working
// directory or the binary's directory, walking up at most a few levels:
// `make soak` runs in the root, a test in cmd/kvtwin, and bin/kvtwin sits
// one level below the root.
func findRepoFile(rel, bin string) (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if bin != "" {
		if abs, err := filepath.Abs(bin); err == nil {
			starts = append(starts, filepath.Dir(abs))
		}
	}
	for _, dir := range starts {
		for range 4 {
			p := filepath.Join(dir, rel)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return p, nil
			}
			dir = filepath.Dir(dir)
		}
	}
	return "", fmt.Errorf("%s not found above the working directory or the binary %q; run from the repository or name the file", rel, bin)
}

// shellQuote quotes s for the shell-like splitting of an exec: target
// when it holds anything but plain path characters.
func shellQuote(s string) string {
	plain := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-+,:@", c)) {
			plain = false
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// startPublisher runs python on script with args and reads the endpoints
// from its first line. On any error the process is already stopped.
func startPublisher(python, script string, args ...string) (*pyPublisher, error) {
	cmd := exec.Command(python, append([]string{script}, args...)...)
	cmd.SysProcAttr = childSysProcAttr()
	p := &pyPublisher{cmd: cmd, lines: make(chan publisherLine, 4), logs: newLogRing()}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("publisher: stderr pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("publisher: stdout pipe: %w", err)
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("publisher: stdin pipe: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("publisher: start %s %s: %w", python, script, err)
	}
	p.readWG.Add(2)
	go p.readStdout(stdout)
	go p.readStderr(stderr)
	var eps struct{ Pub, Replay string }
	if err := p.answer(&eps); err != nil {
		_ = p.close()
		return nil, fmt.Errorf("publisher %s %s did not start: %w", python, script, err)
	}
	if eps.Pub == "" {
		_ = p.close()
		return nil, fmt.Errorf("publisher %s %s named no PUB endpoint", python, script)
	}
	p.pub, p.replay = eps.Pub, eps.Replay
	return p, nil
}

// readStdout hands every stdout line to lines, then why it stopped.
func (p *pyPublisher) readStdout(r io.Reader) {
	defer p.readWG.Done()
	defer close(p.lines)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readBoundedLine(br, maxPublisherLine)
		if err != nil {
			p.lines <- publisherLine{err: err}
			_, _ = io.Copy(io.Discard, br) // never leave the child blocked on a full pipe
			return
		}
		p.lines <- publisherLine{text: line}
	}
}

// readBoundedLine is the next line without its newline; a line longer
// than limit is an error (the rest of the stream is then unusable).
func readBoundedLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > limit {
			return nil, fmt.Errorf("an answer line longer than %d bytes", limit)
		}
		line = append(line, frag...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(line) > 0 && err == io.EOF:
			return line, nil
		default:
			return nil, err
		}
	}
}

// readStderr keeps the process's last stderr lines for error messages.
func (p *pyPublisher) readStderr(r io.Reader) {
	defer p.readWG.Done()
	br := bufio.NewReaderSize(r, 16<<10)
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			p.logs.add(line)
		}
		if err != nil {
			return
		}
	}
}

// do sends cmd as one JSON line and decodes the answer into ans (nil:
// discard it). An {"error": ...} answer, a dead process or a silent one is
// an error naming the command.
func (p *pyPublisher) do(cmd any, ans any) error {
	b, err := json.Marshal(cmd)
	if err != nil {
		return fmt.Errorf("publisher command: %w", err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("publisher stdin, sending %.80s: %w; stderr: %s", b, err, p.logs.tail(3))
	}
	if err := p.answer(ans); err != nil {
		return fmt.Errorf("publisher, after %.80s: %w", b, err)
	}
	return nil
}

// answer reads one line, refuses an {"error": ...} one, and decodes it into ans.
func (p *pyPublisher) answer(ans any) error {
	timer := time.NewTimer(publisherAnswerTimeout)
	defer timer.Stop()
	var line publisherLine
	select {
	case l, ok := <-p.lines:
		if !ok {
			return fmt.Errorf("the publisher exited; stderr: %s", p.logs.tail(3))
		}
		line = l
	case <-timer.C:
		return fmt.Errorf("no answer within %s; stderr: %s", publisherAnswerTimeout, p.logs.tail(3))
	}
	if line.err != nil {
		return fmt.Errorf("%w; stderr: %s", line.err, p.logs.tail(3))
	}
	var head struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line.text, &head); err != nil {
		return fmt.Errorf("answer %.120q is not JSON: %w", line.text, err)
	}
	if len(head.Error) > 0 && string(head.Error) != "null" {
		return fmt.Errorf("refused: %s", head.Error)
	}
	if ans == nil {
		return nil
	}
	if err := json.Unmarshal(line.text, ans); err != nil {
		return fmt.Errorf("answer %.120q: %w", line.text, err)
	}
	return nil
}

// close ends the process once ({"op":"exit"}, EOF, then a kill after
// publisherExitTimeout) and joins its readers; nil only for a clean exit.
func (p *pyPublisher) close() error {
	p.once.Do(func() {
		_, _ = p.stdin.Write([]byte(`{"op":"exit"}` + "\n"))
		_ = p.stdin.Close()
		exited := make(chan struct{})
		go func() {
			for range p.lines { // the exit's answer, and anything before it
			}
			close(exited)
		}()
		timer := time.NewTimer(publisherExitTimeout)
		defer timer.Stop()
		select {
		case <-exited:
		case <-timer.C:
			_ = p.cmd.Process.Kill()
			<-exited
			p.err = fmt.Errorf("killed: no exit within %s of {\"op\":\"exit\"}", publisherExitTimeout)
		}
		p.readWG.Wait()
		if err := p.cmd.Wait(); err != nil && p.err == nil {
			p.err = fmt.Errorf("exited with %w; stderr: %s", err, p.logs.tail(3))
		}
	})
	return p.err
}
