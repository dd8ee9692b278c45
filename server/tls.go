package server

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/kvtwin/kvtwin/spec"
)

// tlsState is the server's TLS: the certificate pair and the client CAs
// in service, swapped by the reloader (reload.go) while handshakes read
// them. Handshakes see one tls.Config per generation through
// GetConfigForClient, so a rotation never half-applies.
type tlsState struct {
	// base is http.Server's TLSConfig: only the hook to the current one.
	base *tls.Config
	// current is the configuration of the pair and CAs in service.
	current atomic.Pointer[tls.Config]
	// notAfter is the serving certificate's expiry (Unix seconds), for
	// kvtwin_tls_cert_not_after_seconds.
	notAfter atomic.Int64

	// cert and pool are the last good pair and CA pool. Only the loads
	// touch them: New's, then the reloader's goroutine.
	cert              *tls.Certificate
	pool              *x509.CertPool
	requireClientCert bool
}

// newTLSState prepares TLS; the pair (and the CAs when requireClientCert)
// are loaded by the reloader's first loadAll.
func newTLSState(requireClientCert bool) *tlsState {
	t := &tlsState{requireClientCert: requireClientCert}
	t.base = &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return t.current.Load(), nil
		},
	}
	return t
}

// loadCert returns the reload function of the pair certFile, keyFile: the
// chain and key must match, and the leaf must be valid now.
func (t *tlsState) loadCert(certFile, keyFile string) func([][]byte) error {
	return func(b [][]byte) error {
		cert, err := tls.X509KeyPair(b[0], b[1])
		if err != nil {
			return spec.Reject(ErrBadConfig, "Auth.TLSCertFile", certFile,
				fmt.Sprintf("a PEM certificate chain whose private key is Auth.TLSKeyFile %s (%v)", keyFile, err))
		}
		if cert.Leaf == nil {
			if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
				return spec.Reject(ErrBadConfig, "Auth.TLSCertFile", certFile, fmt.Sprintf("a parsable X.509 certificate (%v)", err))
			}
		}
		if now := time.Now(); now.Before(cert.Leaf.NotBefore) || now.After(cert.Leaf.NotAfter) {
			return spec.Reject(ErrBadConfig, "Auth.TLSCertFile", certFile, fmt.Sprintf("a certificate valid now (%s): it is valid from %s to %s",
				now.UTC().Format(time.RFC3339), cert.Leaf.NotBefore.UTC().Format(time.RFC3339), cert.Leaf.NotAfter.UTC().Format(time.RFC3339)))
		}
		t.cert = &cert
		t.publish()
		return nil
	}
}

// loadClientCA returns the reload function of the client CA bundle: one
// or more PEM CERTIFICATE blocks, nothing else.
func (t *tlsState) loadClientCA(file string) func([][]byte) error {
	return func(b [][]byte) error {
		pool, err := parseCAs(b[0])
		if err != nil {
			return spec.Reject(ErrBadConfig, "Auth.TLSClientCAFile", file, fmt.Sprintf("a PEM bundle of CA certificates (%v)", err))
		}
		t.pool = pool
		t.publish()
		return nil
	}
}

// parseCAs reads PEM CERTIFICATE blocks into a pool; any other block, a
// certificate that does not parse, or no certificate at all is an error
// (x509.CertPool.AppendCertsFromPEM would skip them silently).
func parseCAs(b []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is %q, want CERTIFICATE", n+1, block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("no PEM CERTIFICATE block")
	}
	return pool, nil
}

// publish puts the current pair and CAs in service, once both are loaded.
// TLS 1.2 is the oldest version served, and under it only the ECDHE AEAD
// suites (tls12Suites). Client certificates are verified when given and
// required per route (auth_routes.go), so the open routes stay reachable
// by probes that hold none.
func (t *tlsState) publish() {
	if t.cert == nil || (t.requireClientCert && t.pool == nil) {
		return
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		CipherSuites: tls12Suites(),
		NextProtos:   []string{"http/1.1"},
		Certificates: []tls.Certificate{*t.cert},
	}
	if t.pool != nil {
		cfg.ClientCAs = t.pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	t.current.Store(cfg)
	t.notAfter.Store(t.cert.Leaf.NotAfter.Unix())
}

// tls12Suites are the TLS 1.2 cipher suites served: forward secrecy
// (ECDHE) and authenticated encryption (GCM, ChaCha20-Poly1305) only, the
// "intermediate" set of Mozilla's server-side TLS guidance, which every
// TLS 1.2 client of the last decade speaks. Go's defaults would also offer
// CBC-SHA1 suites. TLS 1.3's suites are all of this kind and not
// configurable.
func tls12Suites() []uint16 {
	return []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	}
}

// serveConns serves hs on ln: plain HTTP, or TLS with the pair in service.
// TLS serves HTTP/1.1 only: every bound of docs/reliability.md (connections,
// slow readers and writers) was set and measured per HTTP/1.1 connection,
// and HTTP/2's streams would multiply what one connection may hold.
func (s *Server) serveConns(hs *http.Server, ln net.Listener) error {
	if s.auth.tls == nil {
		return hs.Serve(ln)
	}
	hs.TLSConfig = s.auth.tls.base
	hs.Protocols = new(http.Protocols)
	hs.Protocols.SetHTTP1(true)
	return hs.ServeTLS(ln, "", "")
}
