package remote

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHTTPSendsTheBearerTokenAndTrustsTheGivenCA: against an https://
// server that wants a token, the call succeeds only with Options.TLS
// trusting its certificate and Options.Token sent as a Bearer header; the
// token never shows in the error of a refused call.
func TestHTTPSendsTheBearerTokenAndTrustsTheGivenCA(t *testing.T) {
	const token = "write-token-0123456789abcdef"
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("WWW-Authenticate", `Bearer realm="kvtwin"`)
			http.Error(w, `{"object":"error","message":"needs a bearer token","code":401}`, http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`["transfer.group_contiguous"]`))
	}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	trust := &tls.Config{RootCAs: pool}

	for _, tc := range []struct {
		name string
		o    Options
		says string
	}{
		{"no CA", Options{Token: token}, "certificate"},
		{"no token", Options{TLS: trust}, "HTTP 401"},
		{"another token", Options{TLS: trust, Token: token + "x"}, "HTTP 401"},
	} {
		r, err := Open(srv.URL, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Ops()
		r.Close()
		var te *TransportError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), token) {
			t.Errorf("%s: Ops() = %v, want a transport error saying %q and never the token", tc.name, err, tc.says)
		}
	}
	r, err := Open(srv.URL, Options{TLS: trust, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if ops, err := r.Ops(); err != nil || len(ops) != 1 {
		t.Errorf("Ops() with the CA and the token = %v, %v", ops, err)
	}
}
