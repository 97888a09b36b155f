// Package clustertest starts embedded nodes for other packages' tests.
package clustertest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/cluster"
)

// RunWithNode starts a node in a temporary data dir, listening on a random
// loopback port (tests connect several clients over TCP), and a client
// connection to it, and returns run's exit code; 1 when the node cannot
// start. tweak may adjust the config. Meant for TestMain:
// os.Exit(clustertest.RunWithNode(…)).
func RunWithNode(prefix string, tweak func(*cluster.Config), run func(n *cluster.Node, nc *nats.Conn) int) int {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	cfg := cluster.DefaultConfig(dir)
	cfg.Listen = "127.0.0.1:0"
	if tweak != nil {
		tweak(&cfg)
	}
	node, err := cluster.Start(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer node.Close(ctx)
	nc, err := node.Connect()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	return run(node, nc)
}

// SelfSignedCert writes a self-signed certificate for 127.0.0.1 and
// localhost, and its key, into dir.
func SelfSignedCert(t testing.TB, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sessionlog-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// SmallNode starts a node of the test's own whose max payload is
// maxPayload (so that replies outgrow it with little data), without
// fsync, and a connection to it; both are closed when the test ends.
func SmallNode(t testing.TB, maxPayload int32) (*cluster.Node, *nats.Conn) {
	t.Helper()
	cfg := cluster.DefaultConfig(t.TempDir())
	cfg.Listen, cfg.MaxPayload, cfg.SyncAlways = "127.0.0.1:0", maxPayload, false
	n, err := cluster.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(context.Background()) })
	c, err := n.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return n, c
}

// FreePort is a TCP port on loopback nobody listens on now (see
// cluster.FreePorts: not one the system may give an outgoing connection).
func FreePort(t testing.TB) int {
	t.Helper()
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// SyncBuffer is output written by one goroutine (a process's copier, a
// server's) and read by the test's checks.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
