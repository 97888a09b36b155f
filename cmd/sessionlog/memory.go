package main

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A server's load comes in bursts (a flood of appends, clients cut off):
// afterwards Go keeps the freed heap for reuse and returns it to the
// system only slowly, so a quiet server can show the RSS of its busiest
// minute for many more. serve checks twice a minute and, when more than
// releaseAbove bytes of heap are free but still held, returns them.
const (
	releaseEvery = 30 * time.Second
	releaseAbove = 16 << 20
)

// memoryReleaser runs until ctx ends; stop waits for it.
func memoryReleaser(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(releaseEvery)
		defer t.Stop()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				metrics.Read(sample)
				if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > releaseAbove {
					debug.FreeOSMemory()
				}
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// maxDefaultMemoryLimit caps the soft memory limit serve sets by itself.
const maxDefaultMemoryLimit = 8 << 30

// setMemoryLimit gives the Go runtime a soft memory limit: limit, or
// (0) $GOMEMLIMIT when set, else half of the machine's (or the cgroup's)
// memory, at most maxDefaultMemoryLimit. Near it the collector runs more
// often instead of letting the heap double; it returns the limit set (0:
// none).
func setMemoryLimit(limit int64) int64 {
	if limit == 0 {
		if os.Getenv("GOMEMLIMIT") != "" {
			return debug.SetMemoryLimit(-1) // the runtime applied it
		}
		total := machineMemory()
		if total <= 0 {
			return 0
		}
		limit = min(total/2, maxDefaultMemoryLimit)
	}
	debug.SetMemoryLimit(limit)
	return limit
}

// machineMemory is the cgroup's memory limit when there is one, else the
// machine's memory (Linux; 0 elsewhere).
func machineMemory() int64 {
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
