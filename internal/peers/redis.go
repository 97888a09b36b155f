package peers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"time"
)

// Redis is a redis-server of the caller's, on loopback, keeping nothing
// on disk.
type Redis struct {
	// URL is redis://127.0.0.1:<port>.
	URL string
	cmd *exec.Cmd
}

// ErrNoRedis is a machine without redis-server.
var ErrNoRedis = errors.New("peers: no redis-server (apt-get install redis-server)")

// StartRedis starts redis-server (from PATH or /usr/bin) on a free
// loopback port, in dir, and waits until it answers.
func StartRedis(ctx context.Context, dir string) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if _, serr := exec.LookPath("/usr/bin/redis-server"); serr != nil {
			return nil, ErrNoRedis
		}
		bin = "/usr/bin/redis-server"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "yes")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("peers: start redis-server: %w", err)
	}
	r := &Redis{URL: fmt.Sprintf("redis://127.0.0.1:%d", port), cmd: cmd}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return r, nil
		}
		select {
		case <-ctx.Done():
			r.Stop()
			return nil, fmt.Errorf("peers: redis-server on %s did not answer: %w", addr, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop ends the server and waits for it.
func (r *Redis) Stop() {
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
}
