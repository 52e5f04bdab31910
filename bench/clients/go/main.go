// SPDX-License-Identifier: Apache-2.0

// bench/clients/go: a leased tag's Next, and a Local's (one per
// goroutine), beside a bare atomic.AddInt64 in the same run, on 1 and
// several goroutines, and the server calls per million IDs at a steady
// rate. Usage: go run . URL [TAG]
package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	frond "frond.dev/frond/clients/go"
)

const (
	rounds = 15
	perRun = 10_000_000
)

var sink int64

// lastWall is the wall-clock time of the last run, for the second table.
var lastWall time.Duration

const (
	header = "| goroutines | atomic.AddInt64 | bound, add | pointer, add, bound | Tag.Next | ratio to the counter | ratio to bound, add | Local.Next | its ratio to the counter |"
	rule   = "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
)

func bare(threads int) time.Duration {
	var x int64
	return run(threads, func(n int) int64 {
		var s int64
		for i := 0; i < n; i++ {
			s += atomic.AddInt64(&x, 1)
		}
		return s
	})
}

// floor is the least a range that can be swapped for the next one costs:
// the current range loaded through an atomic pointer, the atomic add on
// its counter and one comparison with its bound.
type floor struct {
	end int64
	_   [56]byte
	n   int64
	_   [56]byte
}

func bounded(cur *unsafe.Pointer, threads int) time.Duration {
	return run(threads, func(n int) int64 {
		var s int64
		for i := 0; i < n; i++ {
			f := (*floor)(atomic.LoadPointer(cur))
			v := atomic.AddInt64(&f.n, 1)
			if v >= f.end {
				panic("the bound is 2^62")
			}
			s += v
		}
		return s
	})
}

// fields is the least a bounded range costs when, as in Tag, the bound
// and the cursor are fields reached without a pointer: the bound loaded
// before the add, one comparison; inlined in the loop, where Tag.Next is
// a call.
type fields struct {
	_   [64]byte
	end int64
	_   [56]byte
	n   int64
	_   [56]byte
}

func boundAdd(f *fields, threads int) time.Duration {
	return run(threads, func(n int) int64 {
		var s int64
		for i := 0; i < n; i++ {
			e := atomic.LoadInt64(&f.end)
			v := atomic.AddInt64(&f.n, 1)
			if uint64(v) > uint64(e) {
				panic("the bound is 2^62")
			}
			s += v
		}
		return s
	})
}

// mix is a little work on each ID, the same in both loops below: a
// caller does something with its IDs. Its multiply and xor lengthen the
// loop around the locked add past what this CPU runs at the bare
// counter's speed (bench/clients/lockadd.c), so the two loops compare the
// counter and the tag in a loop of the shape a caller's has.
const mix = -7046029254386353131 // 0x9E3779B97F4A7C15

func bareMixed(threads int) time.Duration {
	var x int64
	return run(threads, func(n int) int64 {
		var s int64
		for i := 0; i < n; i++ {
			s = (s ^ atomic.AddInt64(&x, 1)) * mix
		}
		return s
	})
}

func taggedMixed(t *frond.Tag, threads int) time.Duration {
	return run(threads, func(n int) int64 {
		var s int64
		for i := 0; i < n; i++ {
			v, err := t.Next()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			s = (s ^ v) * mix
		}
		return s
	})
}

func tagged(t *frond.Tag, threads int) time.Duration {
	return run(threads, func(n int) int64 {
		var s int64
		for i := 0; i < n; i++ {
			v, err := t.Next()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			s += v
		}
		return s
	})
}

// localed is tagged through a Local per goroutine.
func localed(t *frond.Tag, threads int) time.Duration {
	return run(threads, func(n int) int64 {
		var s int64
		loc := t.Local()
		for i := 0; i < n; i++ {
			v, err := loc.Next()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			s += v
		}
		return s
	})
}

// run makes perRun calls split over threads goroutines, each on its own
// OS thread, and returns the CPU time they used per call: on a machine
// shared with other work, time spent waiting for a core is not counted.
func run(threads int, body func(n int) int64) time.Duration {
	var wg sync.WaitGroup
	var cpu int64
	t0 := time.Now()
	defer func() { lastWall = time.Since(t0) }()
	for g := 0; g < threads; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			t0 := threadCPU()
			atomic.AddInt64(&sink, body(perRun/threads))
			atomic.AddInt64(&cpu, threadCPU()-t0)
		}()
	}
	wg.Wait()
	return time.Duration(cpu)
}

// threadCPU is the calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() int64 {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3,
		uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		panic(e)
	}
	return ts.Nano()
}

func median(d []float64) float64 {
	sort.Float64s(d)
	return d[len(d)/2]
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go run . URL [TAG]")
		os.Exit(2)
	}
	tagName := "bench"
	if len(os.Args) > 2 {
		tagName = os.Args[2]
	}
	c, err := frond.New(frond.Options{Servers: []string{os.Args[1]}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Close()
	t, err := c.Tag(tagName, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tagged(t, 1) // warm-up: ranges grow to their largest
	fmt.Printf("Go %s, GOMAXPROCS %d, %d rounds of %d IDs, medians of CPU ns per ID\n\n",
		runtime.Version(), runtime.GOMAXPROCS(0), rounds, perRun)
	fmt.Println(header)
	fmt.Println(rule)
	before := c.Stats()
	var wall []string
	for _, threads := range []int{1, 2, 4} {
		var b, a, f, n, o, wb, wa, wf, wn, wo []float64
		fl := unsafe.Pointer(&floor{end: 1 << 62})
		fd := &fields{end: 1 << 62}
		for r := 0; r < rounds; r++ {
			b = append(b, float64(bare(threads).Nanoseconds())/perRun)
			wb = append(wb, float64(lastWall.Nanoseconds())/perRun)
			a = append(a, float64(boundAdd(fd, threads).Nanoseconds())/perRun)
			wa = append(wa, float64(lastWall.Nanoseconds())/perRun)
			f = append(f, float64(bounded(&fl, threads).Nanoseconds())/perRun)
			wf = append(wf, float64(lastWall.Nanoseconds())/perRun)
			n = append(n, float64(tagged(t, threads).Nanoseconds())/perRun)
			wn = append(wn, float64(lastWall.Nanoseconds())/perRun)
			o = append(o, float64(localed(t, threads).Nanoseconds())/perRun)
			wo = append(wo, float64(lastWall.Nanoseconds())/perRun)
		}
		row := func(b, a, f, n, o []float64) string {
			mb, ma, mf, mn, mo := median(b), median(a), median(f), median(n), median(o)
			return fmt.Sprintf("| %d | %.2f | %.2f | %.2f | %.2f | %.2f× | %.2f× | %.2f | %.2f× |",
				threads, mb, ma, mf, mn, mb/mn, ma/mn, mo, mb/mo)
		}
		fmt.Println(row(b, a, f, n, o))
		wall = append(wall, row(wb, wa, wf, wn, wo))
	}
	fmt.Print("\nThe same rounds in wall-clock ns per ID (contention shows here, and so does other work on the machine):\n\n")
	fmt.Println(header)
	fmt.Println(rule)
	for _, l := range wall {
		fmt.Println(l)
	}
	var mb, mn []float64
	for r := 0; r < rounds; r++ {
		mb = append(mb, float64(bareMixed(1).Nanoseconds())/perRun)
		mn = append(mn, float64(taggedMixed(t, 1).Nanoseconds())/perRun)
	}
	fmt.Print("\nOne goroutine, the same work on each ID in both loops (an xor and a multiply), CPU ns per ID:\n\n")
	fmt.Println("| goroutines | atomic.AddInt64, work | Tag.Next, work | ratio to the counter |")
	fmt.Println("| ---: | ---: | ---: | ---: |")
	fmt.Printf("| 1 | %.2f | %.2f | %.2f× |\n", median(mb), median(mn), median(mb)/median(mn))
	after := c.Stats()
	ids := after.Leased - before.Leased
	fmt.Printf("\nsteady rate: %d range calls for %d IDs leased: %.2f calls per million IDs\n",
		after.Calls-before.Calls, ids, float64(after.Calls-before.Calls)*1e6/float64(ids))
}
