package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
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
