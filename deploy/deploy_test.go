package deploy

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"gopkg.in/yaml.v3"
)

// Each nats-server config loads in the server's own parser, as a node of
// one JetStream cluster that fsyncs every write.
func TestNATSConfigsLoad(t *testing.T) {
	files, _ := filepath.Glob("nats/*.conf")
	if len(files) != 3 {
		t.Fatalf("%d node configs, want 3", len(files))
	}
	names := map[string]bool{}
	t.Setenv("SESSIONLOG_ENCRYPTION_KEY", "c2Vzc2lvbmxvZyB0ZXN0IGtleSBmcm9tIHRoZSBlbnY=") // as the node env file gives it
	for _, f := range files {
		opts, err := server.ProcessConfigFile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		switch {
		case !opts.JetStream:
			t.Errorf("%s: JetStream off", f)
		case !opts.SyncAlways:
			t.Errorf("%s: not fsyncing every write", f)
		case opts.Cluster.Name != "sessionlog" || opts.Cluster.Port != 6222:
			t.Errorf("%s: cluster %q port %d", f, opts.Cluster.Name, opts.Cluster.Port)
		case len(opts.Routes) != 2:
			t.Errorf("%s: %d routes, want the 2 other nodes", f, len(opts.Routes))
		case opts.MaxPayload != 8<<20:
			t.Errorf("%s: max payload %d", f, opts.MaxPayload)
		case opts.JetStreamKey != os.Getenv("SESSIONLOG_ENCRYPTION_KEY") || opts.JetStreamCipher != server.ChaCha:
			t.Errorf("%s: not encrypted at rest with the key from the environment", f)
		}
		for _, r := range opts.Routes {
			if strings.Contains(r.Host, opts.ServerName) {
				t.Errorf("%s routes to itself", f)
			}
		}
		names[opts.ServerName] = true
	}
	if len(names) != 3 {
		t.Errorf("server names %v are not distinct", names)
	}
}

// serveFlags are the flags of `sessionlog serve` the deployments use.
var serveFlags = map[string]bool{
	"data": true, "name": true, "listen": true, "cluster": true, "cluster-listen": true,
	"routes": true, "cluster-size": true, "cluster-advertise": true, "replicas": true, "logs": true, "max-store": true, "max-memory": true,
	"http": true, "encryption-key-file": true, "encryption-prev-key-file": true, "encryption-cipher": true,
}

// checkServeArgs checks a serve command line uses known flags and joins a
// three-node cluster.
func checkServeArgs(t *testing.T, where string, args []string) {
	t.Helper()
	if len(args) == 0 || args[0] != "serve" {
		t.Errorf("%s: command %v is not serve", where, args)
		return
	}
	seen := map[string]bool{}
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !serveFlags[name] {
			t.Errorf("%s: unknown flag %q", where, a)
		}
		seen[name] = true
	}
	for _, need := range []string{"data", "name", "listen", "http", "cluster", "routes", "cluster-size", "encryption-key-file"} {
		if !seen[need] {
			t.Errorf("%s: no -%s", where, need)
		}
	}
}

func TestComposeFile(t *testing.T) {
	data, err := os.ReadFile("compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Command []string `yaml:"command"`
			Volumes []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Services) != 3 {
		t.Fatalf("%d services, want 3", len(doc.Services))
	}
	for name, s := range doc.Services {
		checkServeArgs(t, "compose "+name, s.Command)
		if len(s.Volumes) != 1 {
			t.Errorf("compose %s: no data volume", name)
		}
	}
}

func TestKubernetesManifests(t *testing.T) {
	data, err := os.ReadFile("k8s/sessionlog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	kinds := map[string]int{}
	for {
		var doc struct {
			Kind string `yaml:"kind"`
			Spec struct {
				Replicas    int    `yaml:"replicas"`
				ServiceName string `yaml:"serviceName"`
				Template    struct {
					Spec struct {
						Containers []struct {
							Args []string `yaml:"args"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
				VolumeClaimTemplates []any `yaml:"volumeClaimTemplates"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&doc); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatal(err)
		}
		kinds[doc.Kind]++
		if doc.Kind == "StatefulSet" {
			if doc.Spec.Replicas != 3 || doc.Spec.ServiceName != "sessionlog" || len(doc.Spec.VolumeClaimTemplates) != 1 {
				t.Errorf("statefulset: %+v", doc.Spec)
			}
			checkServeArgs(t, "statefulset", doc.Spec.Template.Spec.Containers[0].Args)
		}
	}
	if kinds["StatefulSet"] != 1 || kinds["Service"] != 2 {
		t.Fatalf("manifests hold %v", kinds)
	}
}

func TestSystemdUnit(t *testing.T) {
	f, err := os.Open("systemd/sessionlog@.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	section := ""
	keys := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("line %q is not key=value", line)
			}
			keys[section+"."+k] = v
		}
	}
	for _, k := range []string{"Unit.Description", "Service.ExecStart", "Service.Restart", "Install.WantedBy", "Service.StateDirectory", "Service.DynamicUser"} {
		if keys[k] == "" {
			t.Errorf("unit has no %s", k)
		}
	}
	exec := strings.Fields(keys["Service.ExecStart"])
	if len(exec) < 2 || !strings.HasSuffix(exec[0], "/sessionlog") {
		t.Fatalf("ExecStart %q", keys["Service.ExecStart"])
	}
	checkServeArgs(t, "systemd", exec[1:])
	env, err := os.ReadFile("systemd/sessionlog.env")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"LISTEN", "HTTP", "CLUSTER", "CLUSTER_LISTEN", "ROUTES", "CLUSTER_SIZE"} {
		if !bytes.Contains(env, []byte(v+"=")) || !strings.Contains(keys["Service.ExecStart"], "${"+v+"}") {
			t.Errorf("%s is not both set in the env file and used by ExecStart", v)
		}
	}
}
