package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/internal/testpki"
)

// TestServeRefusesANonLoopbackAddrWithoutAuthentication: `kvtwin serve
// --addr 0.0.0.0:…` without --auth-tokens or --tls-client-ca exits 2
// before listening, naming the address and --insecure-no-auth; a bad
// --metrics-auth names the flag.
func TestServeRefusesANonLoopbackAddrWithoutAuthentication(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		code, stderr := serveExit(t, "--addr", addr)
		if code != 2 || !strings.Contains(stderr, "Addr = "+addr) || !strings.Contains(stderr, "--insecure-no-auth") ||
			!strings.Contains(stderr, "--auth-tokens") {
			t.Errorf("serve --addr %s: exit %d, %q; want 2 naming the address, --auth-tokens and --insecure-no-auth", addr, code, stderr)
		}
	}
	code, stderr := serveExit(t, "--addr", "127.0.0.1:0", "--metrics-auth", "write")
	if code != 2 || !strings.Contains(stderr, "--metrics-auth") || !strings.Contains(stderr, "open or read") {
		t.Errorf("serve --metrics-auth write: exit %d, %q", code, stderr)
	}
	code, stderr = serveExit(t, "--addr", "127.0.0.1:0", "--tls-cert", "server.crt")
	if code != 2 || !strings.Contains(stderr, "--tls-key") {
		t.Errorf("serve --tls-cert without --tls-key: exit %d, %q", code, stderr)
	}
}

// serveExit runs `kvtwin serve` in process and returns its exit status
// and stderr; a serve that is still running after 30 s started listening,
// which fails the test (its server is left to the end of the process).
func serveExit(t *testing.T, args ...string) (int, string) {
	t.Helper()
	type exit struct {
		code   int
		stderr string
	}
	done := make(chan exit, 1)
	go func() {
		code, _, stderr := runCLI(t, append([]string{"serve"}, args...)...)
		done <- exit{code, stderr}
	}()
	select {
	case e := <-done:
		return e.code, e.stderr
	case <-time.After(30 * time.Second):
		t.Fatalf("kvtwin serve %v is serving after 30 s; it should have refused to start", args)
		return 0, ""
	}
}

// TestRealBinaryServesTLSWithTokensToCurlAndFixturesCheck runs `kvtwin
// serve --tls-cert --tls-key --auth-tokens`: curl without a token gets
// 401 on a write route, and `kvtwin fixtures check` replays a golden file
// over HTTPS with --tls-ca and --token-file, and fails without the token.
func TestRealBinaryServesTLSWithTokensToCurlAndFixturesCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	ca := testpki.NewCA(t, "kvtwin test CA")
	certFile, keyFile := ca.Server(t).Write(t, dir, "server")
	caFile := filepath.Join(dir, "ca.pem")
	testpki.WriteFile(t, caFile, ca.PEM)
	const token = "read-token-0123456789abcdef"
	tokens := filepath.Join(dir, "tokens")
	testpki.WriteFile(t, tokens, []byte("read "+token+"\n"))
	tokenFile := filepath.Join(dir, "token")
	testpki.WriteFile(t, tokenFile, []byte(token+"\n"))

	base, stop := serveBinary(t, "--tls-cert", certFile, "--tls-key", keyFile, "--auth-tokens", tokens)
	base = "https://" + strings.TrimPrefix(base, "http://")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	curl := exec.CommandContext(ctx, "/usr/bin/curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", caFile,
		"-X", "POST", "-d", `{"page_size":2,"capacity_tokens":16}`, base+"/v1/prefix/chat")
	curl.Stdout, curl.Stderr = &out, os.Stderr
	if err := curl.Run(); err != nil || out.String() != "401" {
		t.Errorf("curl create without a token: %v, status %q; want 401", err, out.String())
	}

	golden := "../../fixtures/testdata/transfer.filter_cp_rank.jsonl"
	t.Setenv("KVTWIN_TOKEN", "")
	t.Setenv("KVTWIN_TOKEN_FILE", "")
	code, stdout, stderr := runCLI(t, "fixtures", "check", "--impl", base, "--tls-ca", caFile, "--token-file", tokenFile, golden)
	if code != 0 || !strings.Contains(stdout, "ok ") {
		t.Errorf("fixtures check over HTTPS with the token: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "fixtures", "check", "--impl", base, "--tls-ca", caFile, golden)
	if code == 0 || !strings.Contains(stdout+stderr, "401") || strings.Contains(stdout+stderr, token) {
		t.Errorf("fixtures check without a token: exit %d, want a failure naming the 401 (and never the token)\n%s%s", code, stdout, stderr)
	}
	t.Setenv("KVTWIN_TOKEN", token)
	if code, stdout, stderr := runCLI(t, "fixtures", "check", "--impl", base, "--tls-ca", caFile, golden); code != 0 {
		t.Errorf("fixtures check with $KVTWIN_TOKEN: exit %d\n%s%s", code, stdout, stderr)
	}
	stop()
}
