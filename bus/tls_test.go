package bus_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/actorlet/actorlet/bus"
)

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "actorlet-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestEmbeddedTLS: with a certificate the embedded server speaks only TLS,
// on every address, and the agent dials itself through loopback.
func TestEmbeddedTLS(t *testing.T) {
	cert, key := selfSigned(t)
	ctx := testContext(t)
	c, err := bus.Connect(ctx, bus.Options{EmbeddedHost: "0.0.0.0", EmbeddedPort: -1, StoreDir: t.TempDir(),
		User: "node", Password: "s3cret", EmbeddedTLSCert: cert, EmbeddedTLSKey: key})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(c.Close)
	if !c.NC.TLSRequired() {
		t.Error("embedded server with a certificate does not require TLS")
	}
	if nc, err := nats.Connect(c.ClientURL(), nats.UserInfo("node", "s3cret"), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Error("client that does not trust the certificate connected")
	}
	nc, err := nats.Connect(c.ClientURL(), nats.UserInfo("node", "s3cret"), nats.RootCAs(cert), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	nc.Close()
}
