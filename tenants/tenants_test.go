package tenants_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/tenants"
)

func TestLoad(t *testing.T) {
	users := `"users":[{"user":"alice","password":"pw"}]`
	tests := []struct {
		name, file string
		err        error
		says       string
	}{
		{"accounts and settings", `{"tenants":[{"name":"acme",` + users + `,"maxStore":1000,"offload":4096,"retention":{"maxIdle":"720h","archive":false}}]}`, nil, ""},
		{"an unknown member", `{"tenants":[{"name":"acme",` + users + `,"colour":1}]}`, tenants.ErrInvalid, "colour"},
		{"a bad account", `{"tenants":[{"name":"SYS",` + users + `}]}`, cluster.ErrInvalidConfig, "reserved"},
		{"a negative offload", `{"tenants":[{"name":"acme",` + users + `,"offload":-1}]}`, tenants.ErrInvalid, "offload"},
		{"its format's version", `{"version":1,"tenants":[{"name":"acme",` + users + `,"maxStore":1000,"offload":4096,"retention":{"maxIdle":"720h","archive":false}}]}`, nil, ""},
		{"a later release's format", `{"version":2,"tenants":[{"name":"acme",` + users + `}]}`, session.ErrNewerFormat, "written by a newer sessionlog"},
		{"a bad redaction rule", `{"tenants":[{"name":"acme",` + users + `,"redact":{"rules":[{"name":"x","pattern":"("}]}}]}`, tenants.ErrInvalid, "redact"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tenants.json")
			os.WriteFile(path, []byte(tc.file), 0o600)
			f, err := tenants.Load(path)
			if tc.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				acme, ok := f.Of("acme")
				if !ok || acme.Offload == nil || *acme.Offload != 4096 || acme.Retention == nil || f.Auth().Tenants[0].MaxStore != 1000 || f.Auth().Tenants[0].Users[0].Name != "alice" {
					t.Fatalf("read %+v", f)
				}
				return
			}
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err %v, want %v saying %q", err, tc.err, tc.says)
			}
		})
	}
}
