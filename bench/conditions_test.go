package bench

import (
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// Another process busy during a run is seen: its CPU time is not this
// process's, so it counts as other load (a core of the machine's).
func TestConditionsSeeOtherLoad(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/stat is Linux's")
	}
	c := startConditions(Config{})
	if c.CPU == "" || c.OtherLoad != -1 {
		t.Fatalf("before the run: %+v", c)
	}
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	c.finish()
	busy.Process.Kill()
	busy.Wait()
	// One core busy of the machine's: 1/NumCPU of its time, less what the
	// scheduler gave to others meanwhile.
	if want := 0.6 / float64(runtime.NumCPU()); c.OtherLoad < want {
		t.Fatalf("a busy loop in another process was seen as %.2f of the CPU, want at least %.2f: %s", c.OtherLoad, want, c)
	}
	t.Logf("%s", c)
}
