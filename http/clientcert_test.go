package http

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"
)

// certFixture makes a CA and the certificates it signs.
type certFixture struct {
	ca  *x509.Certificate
	key *ecdsa.PrivateKey
}

func newCertFixture(t testing.TB) *certFixture {
	t.Helper()
	f := &certFixture{}
	f.ca, f.key = f.sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "callers"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign,
	}, 4*time.Hour)
	return f
}

// sign signs tmpl, valid for validity from an hour ago, with a new key: by the CA, or by
// itself when the fixture has none yet.
func (f *certFixture) sign(t testing.TB, tmpl *x509.Certificate, validity time.Duration) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.SerialNumber == nil {
		tmpl.SerialNumber = big.NewInt(0x1234567890)
	}
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = tmpl.NotBefore.Add(validity)
	parent, signer := f.ca, f.key
	if parent == nil {
		parent, signer = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// client is a client certificate with the subject given, valid for two hours.
func (f *certFixture) client(t testing.TB, subject pkix.Name, usage ...x509.ExtKeyUsage) *x509.Certificate {
	t.Helper()
	if usage == nil {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	c, _ := f.sign(t, &x509.Certificate{Subject: subject, ExtKeyUsage: usage, KeyUsage: x509.KeyUsageDigitalSignature}, 2*time.Hour)
	return c
}

// TestCertRoles checks how a certificate's subject maps to a caller: each OU that
// names a role grants it, once; any other grants nothing; the CN names the caller, or
// a part of the serial number without one.
func TestCertRoles(t *testing.T) {
	f := newCertFixture(t)
	tests := []struct {
		name      string
		subject   pkix.Name
		wantName  string
		wantRoles []Role
	}{
		{"one role", pkix.Name{CommonName: "shop", OrganizationalUnit: []string{"submit"}}, "cert:shop", []Role{RoleSubmit}},
		{"every role", pkix.Name{CommonName: "ops", OrganizationalUnit: []string{"admin", "submit", "propose", "read", "metrics"}}, "cert:ops",
			[]Role{RoleAdmin, RoleSubmit, RolePropose, RoleRead, RoleMetrics}},
		{"other OUs grant nothing", pkix.Name{CommonName: "eng", OrganizationalUnit: []string{"Engineering", "READ", "read,admin", "read"}}, "cert:eng", []Role{RoleRead}},
		{"a role twice", pkix.Name{CommonName: "x", OrganizationalUnit: []string{"read", "read"}}, "cert:x", []Role{RoleRead}},
		{"no OU", pkix.Name{CommonName: "bare"}, "cert:bare", nil},
		{"no CN", pkix.Name{OrganizationalUnit: []string{"read"}}, "cert:serial:1234567890", []Role{RoleRead}},
		{"a long CN is clipped", pkix.Name{CommonName: strings.Repeat("n", 100)}, "cert:" + strings.Repeat("n", 64) + "...", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := verifyClientCert([]*x509.Certificate{f.client(t, tc.subject)}, pool(f.ca))
			if err != nil {
				t.Fatal(err)
			}
			// A subject's OUs are a set: its encoding orders them.
			got := slices.Sorted(slices.Values(c.roles))
			if c.name != tc.wantName || !slices.Equal(got, slices.Sorted(slices.Values(tc.wantRoles))) || !c.cert {
				t.Fatalf("caller %+v, want %s with roles %v", c, tc.wantName, tc.wantRoles)
			}
		})
	}
}

func pool(certs ...*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

// TestVerifyClientCert checks the certificates refused, each with the reason its 401
// gives, and a chain through an intermediate the client sends.
func TestVerifyClientCert(t *testing.T) {
	f := newCertFixture(t)
	other := newCertFixture(t)
	subject := pkix.Name{CommonName: "c", OrganizationalUnit: []string{"read"}}
	expired, _ := f.sign(t, &x509.Certificate{Subject: subject, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, 30*time.Minute)
	inter, interKey := f.sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "intermediate"}, IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}, 2*time.Hour)
	below := (&certFixture{ca: inter, key: interKey}).client(t, subject)

	tests := []struct {
		name    string
		chain   []*x509.Certificate
		wantErr string
	}{
		{"signed by the CA", []*x509.Certificate{f.client(t, subject)}, ""},
		{"through an intermediate", []*x509.Certificate{below, inter}, ""},
		{"intermediate not sent", []*x509.Certificate{below}, "it is not signed by a trusted CA"},
		{"another CA", []*x509.Certificate{other.client(t, subject)}, "it is not signed by a trusted CA"},
		{"expired", []*x509.Certificate{expired}, "it is expired or not yet valid"},
		{"server only", []*x509.Certificate{f.client(t, subject, x509.ExtKeyUsageServerAuth)}, "it is not for client authentication"},
		{"any usage", []*x509.Certificate{f.client(t, subject, x509.ExtKeyUsageAny)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := verifyClientCert(tc.chain, pool(f.ca))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one holding %q", err, tc.wantErr)
			}
		})
	}
}

// BenchmarkVerifyClientCert is the cost of checking a client certificate, which the
// server pays once per connection (connCert) rather than once per request.
func BenchmarkVerifyClientCert(b *testing.B) {
	f := newCertFixture(b)
	chain := []*x509.Certificate{f.client(b, pkix.Name{CommonName: "c", OrganizationalUnit: []string{"read"}})}
	roots := pool(f.ca)
	for b.Loop() {
		if _, err := verifyClientCert(chain, roots); err != nil {
			b.Fatal(err)
		}
	}
}
