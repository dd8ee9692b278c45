package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/internal/testpki"
	"github.com/kvtwin/kvtwin/server"
)

// The tokens of the authentication tests, one per scope.
const (
	readToken  = "read-token-0123456789abcdef"
	writeToken = "write-token-0123456789abcdef"
	adminToken = "admin-token-0123456789abcdef"
)

// allScopesTokenFile is a token file with one token per scope.
const allScopesTokenFile = "# one token per scope\nread " + readToken + "\nwrite " + writeToken + "\n\nadmin " + adminToken + "\n"

// writeFile writes b to dir/name (replacing it atomically) and returns the path.
func writeFile(t *testing.T, dir, name, b string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	testpki.WriteFile(t, path, []byte(b))
	return path
}

// authServing is a Server running Serve on a loopback listener, over TLS
// when its configuration names a certificate.
type authServing struct {
	url  string // http:// or https:// and the address
	addr string
	logs *logBuffer
}

// serveAuth runs Serve with testConfig after edit, files re-read every
// 20 ms, until the test ends; cleanup waits for Serve to return.
func serveAuth(t *testing.T, edit func(*server.Config)) authServing {
	t.Helper()
	logs := &logBuffer{}
	cfg := testConfig(logs)
	cfg.Auth.ReloadInterval = 20 * time.Millisecond
	edit(&cfg)
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveLoopback(t, s)
	scheme := "http://"
	if cfg.Auth.TLSCertFile != "" {
		scheme = "https://"
	}
	return authServing{url: scheme + addr, addr: addr, logs: logs}
}

// tlsClient is a Go client that trusts ca and presents certs, closed when
// the test ends.
func tlsClient(t *testing.T, ca *testpki.CA, certs ...tls.Certificate) *http.Client {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool, Certificates: certs}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// call sends one request with a bearer token ("" for none).
func call(t *testing.T, c *http.Client, method, url, token, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: readAll(t, resp)}
}

// curlBinary is the real curl the TLS tests drive; .ci/run installs it.
const curlBinary = "/usr/bin/curl"

// curl runs curl with args and a bearer token passed in a header file (so
// it is never on a command line) and returns the status and the body.
func curl(t *testing.T, token string, args ...string) (int, string) {
	t.Helper()
	if _, err := os.Stat(curlBinary); err != nil {
		t.Fatalf("the TLS tests drive a real curl: %v (Debian: apt-get install curl)", err)
	}
	if token != "" {
		header := writeFile(t, t.TempDir(), "auth-header", "Authorization: Bearer "+token+"\n")
		args = append([]string{"-H", "@" + header}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, curlBinary, append([]string{"-sS", "-w", "\n%{http_code}"}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("curl %v: %v: %s", args, err, stderr.String())
	}
	out := stdout.String()
	cut := strings.LastIndexByte(out, '\n')
	status, err := strconv.Atoi(out[cut+1:])
	if err != nil {
		t.Fatalf("curl output %q does not end in a status", out)
	}
	return status, out[:cut]
}

// eventually polls cond every 10 ms for up to 10 s (loaded CI machines;
// the reload interval is 20 ms).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 10 s", what)
}

// metricOf returns the value of the sample line starting with series in
// the /metrics text at base, or -1 when there is none.
func metricOf(t *testing.T, c *http.Client, base, token, series string) float64 {
	t.Helper()
	r := call(t, c, http.MethodGet, base+"/metrics", token, "")
	if r.status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", r.status, r.body)
	}
	if v, ok := sample(t, r.body, series); ok {
		return v
	}
	return -1
}

// readAll reads and closes a response body.
func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
