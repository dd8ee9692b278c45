package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/kvtwin/kvtwin/remote"
)

// clientAuth is how a command that calls a kvtwin server (an http:// or
// https:// --impl) proves who it is and whom it trusts: a bearer token
// read from a file or the environment, never from the command line, where
// other users of the machine could read it, and the CAs and client
// certificate of an https:// server.
type clientAuth struct {
	tokenFile, caFile, certFile, keyFile string
}

// tokenEnv holds the bearer token itself, for CI systems that put secrets
// in the environment; --token-file (or KVTWIN_TOKEN_FILE) wins over it.
const tokenEnv = "KVTWIN_TOKEN"

// maxTokenFileBytes bounds --token-file: one token and a newline.
const maxTokenFileBytes = 64 << 10

// flags adds --token-file, --tls-ca, --tls-client-cert and --tls-client-key.
func (c *clientAuth) flags(f *pflag.FlagSet) {
	f.StringVar(&c.tokenFile, "token-file", envOr("KVTWIN_TOKEN_FILE", ""), "`FILE` holding the bearer token sent to an http(s):// --impl (default $KVTWIN_TOKEN_FILE; else the token itself in $"+tokenEnv+"); a token is never taken from the command line")
	f.StringVar(&c.caFile, "tls-ca", envOr("KVTWIN_TLS_CA", ""), "PEM `FILE` of the CAs an https:// --impl's certificate must chain to (default $KVTWIN_TLS_CA, else the system's)")
	f.StringVar(&c.certFile, "tls-client-cert", "", "PEM client certificate `FILE` for an https:// --impl that requires one (with --tls-client-key)")
	f.StringVar(&c.keyFile, "tls-client-key", "", "PEM private key `FILE` of --tls-client-cert")
}

// apply puts the token and the TLS configuration into o.
func (c clientAuth) apply(o *remote.Options) error {
	token, err := c.token()
	if err != nil {
		return err
	}
	o.Token = token
	o.TLS, err = c.tlsConfig()
	return err
}

// token is --token-file's token, else $KVTWIN_TOKEN's, else "": one
// word, surrounding white space trimmed.
func (c clientAuth) token() (string, error) {
	b, source := []byte(os.Getenv(tokenEnv)), "$"+tokenEnv
	if c.tokenFile != "" {
		var err error
		if b, err = readSmallFile("--token-file", c.tokenFile, maxTokenFileBytes); err != nil {
			return "", err
		}
		source = "--token-file " + c.tokenFile
	}
	tok := bytes.TrimSpace(b)
	if bytes.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("%s: want one token, found white space inside it", source)
	}
	return string(tok), nil
}

// tlsConfig is the client TLS of the flags, or nil when none is set.
func (c clientAuth) tlsConfig() (*tls.Config, error) {
	if c.caFile == "" && c.certFile == "" && c.keyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.caFile != "" {
		b, err := readSmallFile("--tls-ca", c.caFile, 1<<20)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM CERTIFICATE in it", c.caFile)
		}
	}
	if (c.certFile == "") != (c.keyFile == "") {
		return nil, fmt.Errorf("--tls-client-cert and --tls-client-key go together")
	}
	if c.certFile != "" {
		pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-cert %s, --tls-client-key %s: %w", c.certFile, c.keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// readSmallFile reads a file the flag names, refusing one over limit
// bytes before reading it.
func readSmallFile(flag, path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	} else if st.Size() > limit {
		return nil, fmt.Errorf("%s %s: %d bytes: want at most %d", flag, path, st.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s %s: more than %d bytes", flag, path, limit)
	}
	return b, nil
}
