// Package testpki issues real X.509 certificates for the TLS tests of server
// and cmd/kvtwin. It makes a CA, server certificates for the loopback
// addresses and client certificates, ECDSA P-256 keys, PEM-encoded and
// written where a test wants them. It is a
// normal package only so that the test packages that serve or call TLS
// (server, cmd/kvtwin) share one issuer instead of each keeping a copy; it
// is used by tests alone, links testing, and production code never imports
// it (internal/repolint checks that).
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority made for one test.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, PEM-encoded: what a client trusts
	// (--tls-ca) or a server accepts client certificates from
	// (--tls-client-ca).
	PEM []byte
	// Pool holds the CA certificate, for a Go client's RootCAs.
	Pool *x509.CertPool
}

// Pair is an issued certificate and its private key.
type Pair struct {
	// CertPEM and KeyPEM are the leaf certificate and its PKCS #8 key.
	CertPEM, KeyPEM []byte
	// TLS is the pair loaded, for a Go client's Certificates.
	TLS tls.Certificate
	// Serial is the certificate's serial number, unique per CA: a test
	// tells which certificate a server presented by it.
	Serial *big.Int
}

// NewCA makes a self-signed CA named name, valid from an hour ago for a day.
func NewCA(tb testing.TB, name string) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := template(tb, name, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{cert: cert, key: key, PEM: pemBlock("CERTIFICATE", der), Pool: pool}
}

// Server issues a server certificate for 127.0.0.1, ::1 and localhost,
// valid from an hour ago for a day.
func (ca *CA) Server(tb testing.TB) Pair {
	tb.Helper()
	return ca.ServerValid(tb, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
}

// ServerValid is Server with the validity given (an expired certificate
// for a test that must refuse one).
func (ca *CA) ServerValid(tb testing.TB, notBefore, notAfter time.Time) Pair {
	tb.Helper()
	tmpl := template(tb, "kvtwin test server", notBefore, notAfter)
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	tmpl.DNSNames = []string{"localhost"}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	return ca.issue(tb, tmpl)
}

// Client issues a client certificate with common name cn.
func (ca *CA) Client(tb testing.TB, cn string) Pair {
	tb.Helper()
	tmpl := template(tb, cn, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.issue(tb, tmpl)
}

func (ca *CA) issue(tb testing.TB, tmpl *x509.Certificate) Pair {
	tb.Helper()
	key := newKey(tb)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	p := Pair{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", keyDER), Serial: tmpl.SerialNumber}
	if p.TLS, err = tls.X509KeyPair(p.CertPEM, p.KeyPEM); err != nil {
		tb.Fatal(err)
	}
	return p
}

// Write puts the pair in dir as NAME.crt and NAME.key (the key mode 0600)
// and returns their paths. Each file is written to a temporary name and
// renamed, as a Secret volume or a careful operator replaces it.
func (p Pair) Write(tb testing.TB, dir, name string) (certFile, keyFile string) {
	tb.Helper()
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	WriteFile(tb, certFile, p.CertPEM)
	WriteFile(tb, keyFile, p.KeyPEM)
	return certFile, keyFile
}

// WriteFile replaces path with b atomically (a temporary file renamed),
// mode 0600.
func WriteFile(tb testing.TB, path string, b []byte) {
	tb.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

// template is a certificate named cn with a random 128-bit serial.
func template(tb testing.TB, cn string, notBefore, notAfter time.Time) *x509.Certificate {
	tb.Helper()
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		tb.Fatal(err)
	}
	return &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn}, NotBefore: notBefore, NotAfter: notAfter}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
