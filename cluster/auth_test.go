package cluster_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/cluster/clustertest"
)

var perms = cluster.Permissions{Publish: []string{"ok.>"}, Subscribe: []string{"_INBOX.>"}}

func TestAuthConfigValidate(t *testing.T) {
	user := []cluster.User{{Name: "u", Password: "p"}}
	tests := []struct {
		name    string
		auth    cluster.AuthConfig
		wantErr bool
	}{
		{name: "one tenant", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a", Users: user}}, ClientPermissions: perms}},
		{name: "no permissions", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a", Users: user}}}, wantErr: true},
		{name: "no tenants", auth: cluster.AuthConfig{ClientPermissions: perms}, wantErr: true},
		{name: "bad tenant name", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a b", Users: user}}, ClientPermissions: perms}, wantErr: true},
		{name: "reserved name", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "SYS", Users: user}}, ClientPermissions: perms}, wantErr: true},
		{name: "duplicate tenant", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a", Users: user}, {Name: "a", Users: []cluster.User{{Name: "v", Password: "p"}}}}, ClientPermissions: perms}, wantErr: true},
		{name: "user in two tenants", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a", Users: user}, {Name: "b", Users: user}}, ClientPermissions: perms}, wantErr: true},
		{name: "no users", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a"}}, ClientPermissions: perms}, wantErr: true},
		{name: "user without password", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a", Users: []cluster.User{{Name: "u"}}}}, ClientPermissions: perms}, wantErr: true},
		{name: "bad nkey", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a", Users: []cluster.User{{NKey: "SUABC"}}}}, ClientPermissions: perms}, wantErr: true},
		{name: "nkey and password", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a", Users: []cluster.User{{NKey: "U", Password: "p"}}}}, ClientPermissions: perms}, wantErr: true},
		{name: "control character", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a", Users: []cluster.User{{Name: "u", Password: "p\n"}}}}, ClientPermissions: perms}, wantErr: true},
		{name: "edge", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a", Users: user, Edges: []cluster.Edge{{Domain: "laptop", User: "e", Password: "p"}}}}, ClientPermissions: perms}},
		{name: "edge of a bad domain", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a", Users: user, Edges: []cluster.Edge{{Domain: "lap.top", User: "e", Password: "p"}}}}, ClientPermissions: perms}, wantErr: true},
		{name: "edge without credentials", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a", Users: user, Edges: []cluster.Edge{{Domain: "laptop"}}}}, ClientPermissions: perms}, wantErr: true},
		{name: "edge domain twice", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a", Users: user, Edges: []cluster.Edge{{Domain: "d", User: "e", Password: "p"}}}, {Name: "b", Users: []cluster.User{{Name: "v", Password: "p"}}, Edges: []cluster.Edge{{Domain: "d", User: "f", Password: "p"}}}}, ClientPermissions: perms}, wantErr: true},
		{name: "edge user is a tenant user", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a", Users: user, Edges: []cluster.Edge{{Domain: "d", User: "u", Password: "q"}}}}, ClientPermissions: perms}, wantErr: true},
		{name: "negative limit", auth: cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "a", Users: user, MaxStore: -1}}, ClientPermissions: perms}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.auth.Validate()
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, cluster.ErrInvalidConfig)) {
				t.Fatalf("Validate() = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

// Passwords with the configuration language's special characters, and
// bcrypt hashes, work as given; permissions apply.
func TestPasswordsAndPermissions(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("hashed-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	odd := `$HOME "quoted" \back\ {brace} # not a comment`
	cfg := cluster.DefaultConfig(t.TempDir())
	cfg.Listen = "127.0.0.1:0"
	cfg.Auth = &cluster.AuthConfig{Tenants: []cluster.Tenant{{Name: "t", Users: []cluster.User{
		{Name: "odd", Password: odd}, {Name: "hashed", Password: string(hash)},
	}}, {Name: "small", MaxConnections: 1, Users: []cluster.User{{Name: "one", Password: "p"}}}}, ClientPermissions: perms}
	ctx := context.Background()
	n, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(ctx)
	for _, c := range []struct{ user, pw string }{{"odd", odd}, {"hashed", "hashed-pw"}} {
		nc, err := nats.Connect(n.ClientURL(), nats.UserInfo(c.user, c.pw))
		if err != nil {
			t.Fatalf("%s: %v", c.user, err)
		}
		nc.Close()
	}
	if _, err := nats.Connect(n.ClientURL(), nats.UserInfo("hashed", string(hash))); err == nil {
		t.Fatal("the hash itself was accepted as a password")
	}
	if _, err := n.Connect(); err == nil {
		t.Fatal("an anonymous in-process connection was accepted")
	}
	// A tenant's connection limit holds (the node's own service
	// connection counts too, so "small" has room for none).
	if _, err := n.ConnectTenant("small"); err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(n.ClientURL(), nats.UserInfo("one", "p")); err == nil {
		nc.Close()
		t.Fatal("connected past the tenant's connection limit")
	}
	if _, err := n.ConnectTenant("nobody"); !errors.Is(err, cluster.ErrInvalidConfig) {
		t.Fatalf("unknown tenant: %v", err)
	}
	svc, err := n.ConnectTenant("t")
	if err != nil {
		t.Fatal(err)
	}
	// The node's service connection is not restricted; users are.
	if _, err := svc.SubscribeSync("anything.>"); err != nil {
		t.Fatal(err)
	}
	violations := make(chan error, 4)
	nc, err := nats.Connect(n.ClientURL(), nats.UserInfo("odd", odd), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Publish("not.allowed", nil)
	select {
	case err := <-violations:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("got %v, want a permission violation", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("publish outside the permissions was not refused")
	}
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := clustertest.SelfSignedCert(t, dir)
	cfg := cluster.DefaultConfig(filepath.Join(dir, "data"))
	cfg.Listen = "127.0.0.1:0"
	cfg.TLS = &cluster.TLSConfig{CertFile: certFile, KeyFile: keyFile}
	ctx := context.Background()
	n, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(ctx)
	own, err := n.Connect() // trusts the node's certificate
	if err != nil {
		t.Fatal(err)
	}
	if !own.TLSRequired() {
		t.Fatal("the node's own connection is not over TLS")
	}
	if nc, err := nats.Connect(n.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("a client that does not trust the certificate connected")
	}
	pool := x509.NewCertPool()
	pemBytes, _ := os.ReadFile(certFile)
	pool.AppendCertsFromPEM(pemBytes)
	nc, err := nats.Connect(n.ClientURL(), nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	bad := cfg
	bad.DataDir = filepath.Join(dir, "bad")
	bad.TLS = &cluster.TLSConfig{CertFile: certFile}
	if _, err := cluster.Start(ctx, bad); !errors.Is(err, cluster.ErrInvalidConfig) {
		t.Fatalf("TLS without a key: %v", err)
	}
}
