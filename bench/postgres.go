package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// postgres is a PostgreSQL server of the run's own: a cluster made with
// initdb in a temp dir, listening on loopback only, stopped by stop.
type postgres struct {
	url string
	cmd *exec.Cmd
	dir string
}

// pgBin finds a PostgreSQL program: on PATH, or in Debian's versioned
// directory.
func pgBin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	matches, _ := filepath.Glob(filepath.Join("/usr/lib/postgresql", "*", "bin", name))
	if len(matches) > 0 {
		return matches[len(matches)-1]
	}
	return ""
}

// startPostgres makes a cluster in a temp dir of its own (one the server's
// user can reach) and starts it on a free loopback port. PostgreSQL
// refuses to run as root: as root, the cluster belongs to the postgres user
// (or nobody).
func startPostgres(ctx context.Context) (*postgres, error) {
	initdb, server := pgBin("initdb"), pgBin("postgres")
	if initdb == "" || server == "" {
		return nil, errors.New("no PostgreSQL (initdb, postgres): apt-get install postgresql")
	}
	dir, err := os.MkdirTemp("", "sessionlog-pg-")
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			os.RemoveAll(dir)
		}
	}()
	data, sock := filepath.Join(dir, "pgdata"), filepath.Join(dir, "pgsock")
	for _, d := range []string{data, sock} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		for _, name := range []string{"postgres", "nobody"} {
			if u, err := user.Lookup(name); err == nil {
				uid, _ := strconv.Atoi(u.Uid)
				gid, _ := strconv.Atoi(u.Gid)
				cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
				break
			}
		}
		if cred == nil {
			return nil, errors.New("running as root with no postgres or nobody user for PostgreSQL")
		}
		for _, d := range []string{dir, data, sock} {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, err
			}
		}
	}
	as := func(cmd *exec.Cmd) *exec.Cmd {
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		return cmd
	}
	if out, err := as(exec.CommandContext(ctx, initdb, "-D", data, "-U", "postgres", "--auth=trust", "--no-sync")).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// The server's defaults otherwise: fsync and synchronous commit on.
	cmd := as(exec.Command(server, "-D", data, "-p", strconv.Itoa(port), "-k", sock, "-c", "listen_addresses=127.0.0.1"))
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pg := &postgres{url: fmt.Sprintf("postgresql://postgres@127.0.0.1:%d/postgres", port), cmd: cmd, dir: dir}
	ready := func() bool {
		if isready := pgBin("pg_isready"); isready != "" {
			return exec.CommandContext(ctx, isready, "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres").Run() == nil
		}
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	for deadline := time.Now().Add(30 * time.Second); !ready(); {
		if time.Now().After(deadline) || ctx.Err() != nil {
			pg.stop()
			started = true // stop removed the dir
			return nil, fmt.Errorf("PostgreSQL did not start on port %d", port)
		}
		time.Sleep(100 * time.Millisecond)
	}
	started = true
	return pg, nil
}

// stop shuts the server down (a fast shutdown) and waits for it.
func (p *postgres) stop() {
	p.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(p.dir)
}
