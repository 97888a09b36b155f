package cluster

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// A relay carries every byte both ways, and no faster than its bound:
// 384 KiB through a relay of 128 KiB/s (a burst of 128 KiB) takes at
// least two seconds whatever the machine.
func TestRelayBoundsTheLink(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // echo
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	r, err := startRelay(ln.Addr().String(), 128<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	c, err := net.Dial("tcp", r.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := make([]byte, 192<<10) // there and back: 384 KiB through the bucket
	rand.Read(out)
	start := time.Now()
	go c.Write(out)
	back := make([]byte, len(out))
	if _, err := io.ReadFull(c, back); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if !bytes.Equal(back, out) {
		t.Fatal("the relay changed the bytes")
	}
	if took < 1900*time.Millisecond {
		t.Fatalf("384 KiB through a 128 KiB/s relay in %v", took)
	}
	t.Logf("384 KiB through a 128 KiB/s relay: %v", took.Round(time.Millisecond))
	// Closing the relay ends its connections.
	r.close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection outlived its relay")
	}
}
