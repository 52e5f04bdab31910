// SPDX-License-Identifier: Apache-2.0

// The range switch under load: many goroutines on one tag while ranges of
// one to three IDs are swapped under them, leased from a fake fetcher (as
// fast as the switch itself) and from a real server.

package frond

import (
	"fmt"
	"math/rand"
	"sort"
	"sync"
	"testing"
	"time"
)

// leases records the ranges a tag was leased, [start, end) in order.
type leases struct {
	mu     sync.Mutex
	starts []int64
	ends   []int64
	// unordered: ranges of several servers, not in order; hammer does
	// not ask a goroutine's IDs to increase.
	unordered bool
}

func (l *leases) add(start, end int64) {
	l.mu.Lock()
	l.starts = append(l.starts, start)
	l.ends = append(l.ends, end)
	l.mu.Unlock()
}

// ranges copies the ranges leased so far: a tag may still be loading its
// next range in the background while a test reads them.
func (l *leases) ranges() (starts, ends []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int64(nil), l.starts...), append([]int64(nil), l.ends...)
}

// covers says whether v lies in a leased range; the caller holds l.mu.
func (l *leases) covers(v int64) bool {
	i := sort.Search(len(l.starts), func(i int) bool { return l.starts[i] > v }) - 1
	return i >= 0 && v < l.ends[i]
}

// has is covers under l.mu.
func (l *leases) has(v int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.covers(v)
}

// hammer runs g goroutines of up to n Next calls each on tag (they stop
// early at a deadline, so the load is bounded in time too), the odd ones
// through a Local of their own, then checks what a user relies on: no ID
// twice, every ID inside a range the tag was leased, each goroutine's IDs
// strictly increasing. Returns the number of IDs taken.
func hammer(t *testing.T, tag *Tag, l *leases, g, n int) int {
	t.Helper()
	got := make([][]int64, g)
	errs := make(chan error, g)
	stop := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ids := make([]int64, 0, n)
			next := tag.Next
			if i%2 == 1 {
				next = tag.Local().Next
			}
			for k := 0; k < n && (k%256 != 0 || time.Now().Before(stop)); k++ {
				v, err := next()
				if err != nil {
					errs <- err
					return
				}
				ids = append(ids, v)
			}
			got[i] = ids
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.unordered {
		sort.Sort(byStart{l})
	}
	seen := make(map[int64]int, g*n)
	total := 0
	for i, ids := range got {
		if !l.unordered {
			increasing(t, fmt.Sprintf("goroutine %d", i), ids)
		}
		for _, v := range ids {
			if j, dup := seen[v]; dup {
				t.Fatalf("ID %d handed out twice: goroutines %d and %d", v, j, i)
			}
			seen[v] = i
			if !l.covers(v) {
				t.Fatalf("ID %d (goroutine %d) is outside every leased range", v, i)
			}
		}
		total += len(ids)
	}
	if total == 0 {
		t.Fatal("no ID taken")
	}
	return total
}

type byStart struct{ l *leases }

func (b byStart) Len() int           { return len(b.l.starts) }
func (b byStart) Less(i, j int) bool { return b.l.starts[i] < b.l.starts[j] }
func (b byStart) Swap(i, j int) {
	b.l.starts[i], b.l.starts[j] = b.l.starts[j], b.l.starts[i]
	b.l.ends[i], b.l.ends[j] = b.l.ends[j], b.l.ends[i]
}

// fakeLeases hands out ranges of 1 to 3 IDs (no more than asked for),
// strictly increasing with gaps of 0 to 2 between them, at once.
func fakeLeases(tag *Tag, l *leases, seed int64) {
	var mu sync.Mutex
	rnd := rand.New(rand.NewSource(seed))
	top := int64(1)
	tag.mu.Lock()
	tag.lease = func(count int64) (int64, int64, string, error) {
		mu.Lock()
		defer mu.Unlock()
		size := 1 + rnd.Int63n(3)
		if size > count {
			size = count
		}
		start := top + rnd.Int63n(3)
		top = start + size
		l.add(start, top)
		return start, top, "a", nil
	}
	tag.mu.Unlock()
}

func TestSwitchHammer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		validity time.Duration
	}{
		{"no expiry", NoExpiry},
		// Ranges retired by their timer while goroutines take from them.
		{"expiry", 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, Options{Servers: []string{"http://127.0.0.1:9"}})
			tag, err := c.Tag("orders", &TagOptions{MinRange: 1, MaxRange: 3,
				Validity: tc.validity})
			if err != nil {
				t.Fatal(err)
			}
			var l leases
			fakeLeases(tag, &l, time.Now().UnixNano())
			n := hammer(t, tag, &l, 8, 20000)
			st := tag.Stats()
			if st.Ranges < int64(n)/3 || st.Leased < int64(n) {
				t.Fatalf("%d IDs from %+v: the ranges were not switched", n, st)
			}
			t.Logf("%d IDs, %d ranges, %d IDs leased, %d dropped", n, st.Ranges,
				st.Leased, st.Dropped)
		})
	}
}

// The same against a real server: the ranges of 1 to 3 IDs it leases.
func TestSwitchHammerServer(t *testing.T) {
	s := startServer(t, newStore(t, map[string]int{"orders": 10}))
	c := newClient(t, Options{Servers: []string{s.url()}})
	tag, err := c.Tag("orders", &TagOptions{MinRange: 1, MaxRange: 3})
	if err != nil {
		t.Fatal(err)
	}
	var l leases
	tag.mu.Lock()
	real := tag.lease
	tag.lease = func(count int64) (int64, int64, string, error) {
		start, end, srv, err := real(count)
		if err == nil {
			l.add(start, end)
		}
		return start, end, srv, err
	}
	tag.mu.Unlock()
	n := hammer(t, tag, &l, 8, 300)
	if st := tag.Stats(); st.Ranges < int64(n)/3 {
		t.Fatalf("%d IDs from %+v: the ranges were not switched", n, st)
	}
}

// A Next that runs between a switch's two stores, its load of the bound
// and its add where the race puts them, gets an ID above the old range
// and is refused: the cursor is stored first. (Stored the other way
// round, it would take an ID of the new range that the cursor store then
// hands out again.)
func TestSwitchOrder(t *testing.T) {
	c := newClient(t, Options{Servers: []string{"http://127.0.0.1:9"}})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 100, MaxRange: 100, Validity: NoExpiry})
	var l leases
	tag.lease = func(count int64) (int64, int64, string, error) {
		// Contiguous ranges: [1, 101), [101, 201), ...
		l.mu.Lock()
		defer l.mu.Unlock()
		start := int64(1)
		if len(l.ends) > 0 {
			start = l.ends[len(l.ends)-1]
		}
		l.starts = append(l.starts, start)
		l.ends = append(l.ends, start+count)
		return start, start + count, "a", nil
	}
	var between []int64
	var refused [][2]int64
	tag.switching = func() {
		// Next's first steps, as a goroutine racing the switch runs them.
		b := tag.bound.Load()
		v := tag.cursor.Add(1)
		if v <= b {
			between = append(between, v)
		} else {
			refused = append(refused, [2]int64{v, b})
		}
	}
	ids := take(t, tag, 1000)
	if len(between) != 0 {
		t.Fatalf("IDs %v taken between a switch's stores, and again after it", between)
	}
	// The racers, refused, reach the slow path late, when their range is
	// no longer current: their IDs are skipped, not taken from the
	// current range (where they lie, handed out already).
	seen := make(map[int64]bool, len(ids))
	for _, v := range ids {
		seen[v] = true
	}
	if len(refused) < 9 {
		t.Fatalf("%d racers for 10 ranges", len(refused))
	}
	for _, r := range refused {
		v, err := tag.slow(r[0], r[0], r[1], nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if seen[v] {
			t.Fatalf("a racer's late slow path (ID %d, bound %d) took ID %d again",
				r[0], r[1], v)
		}
		seen[v] = true
		ids = append(ids, v)
	}
	increasing(t, "one goroutine", ids)
	for _, v := range ids {
		if !l.has(v) {
			t.Fatalf("ID %d is outside every leased range", v)
		}
	}
	// The racer's IDs, one a switch, are skipped: without them, 1,000
	// IDs from contiguous ranges would have been 1 to 1,000.
	if ids[999] == 1000 {
		t.Fatalf("no ID skipped: the racer never ran")
	}
}

// A range that ends at the top of int64: callers refused after it push
// the cursor past the top, where it wraps to negative values; those are
// refused too, never handed out.
func TestCursorWrap(t *testing.T) {
	c := newClient(t, Options{Servers: []string{"http://127.0.0.1:9"}})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 3, MaxRange: 3, Validity: NoExpiry})
	const top = int64(^uint64(0) >> 1)
	first := true
	tag.lease = func(count int64) (int64, int64, string, error) {
		if first {
			first = false
			return top - 3, top, "a", nil
		}
		return 0, 0, "", newError(CodeUnavailable, "no more")
	}
	ids := take(t, tag, 3)
	if ids[0] != top-3 || ids[2] != top-1 {
		t.Fatalf("IDs %v, want %d to %d", ids, top-3, top-1)
	}
	for i := 0; i < 10; i++ {
		v, err := tag.Next()
		if err == nil {
			t.Fatalf("call %d past the top: ID %d", i, v)
		}
		wantCode(t, err, CodeUnavailable, 0)
	}
	if v := tag.cursor.Load(); v >= 0 {
		t.Fatalf("the cursor did not wrap (%d): the test tests nothing", v)
	}
}

// contiguous leases ranges of count IDs: [1, 1+count), then on.
func contiguous(tag *Tag, l *leases) {
	tag.mu.Lock()
	tag.lease = func(count int64) (int64, int64, string, error) {
		l.mu.Lock()
		start := int64(1)
		if len(l.ends) > 0 {
			start = l.ends[len(l.ends)-1]
		}
		l.mu.Unlock()
		l.add(start, start+count)
		return start, start + count, "a", nil
	}
	tag.mu.Unlock()
}

func takeLocal(t *testing.T, loc *Local, n int) []int64 {
	t.Helper()
	return takeWith(t, loc.Next, n)
}

// What a Local's block keeps and what it does not: a Local that took IDs
// holds the rest of its block, and none of it outlives the range's switch
// (another caller used the range up), its expiry or the close; what the
// block held is counted as dropped, exactly.
func TestLocalBlocks(t *testing.T) {
	c := newClient(t, Options{Servers: []string{"http://127.0.0.1:9"}})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 100, MaxRange: 100, Validity: NoExpiry})
	var l leases
	contiguous(tag, &l)
	loc := tag.Local()
	a := takeLocal(t, loc, 20)
	b := take(t, tag, 150)
	increasing(t, "the Local", a)
	if a[19] != 20 || b[0] <= 20 || b[0] >= 40 {
		t.Fatalf("the Local took %v, Next began at %d: no block held", a, b[0])
	}
	if a2 := takeLocal(t, loc, 1)[0]; a2 <= b[149] {
		t.Fatalf("the Local's next ID, %d, is not above Next's last, %d: its "+
			"block outlived the switch", a2, b[149])
	}

	// A switch to a range below (another server of the store, served
	// under the lock) drops the blocks too: the range before's timer is
	// cancelled, so a block kept would outlive the range's validity.
	c3 := newClient(t, Options{Servers: []string{"http://127.0.0.1:9"}})
	tag3, _ := c3.Tag("orders", &TagOptions{MinRange: 100, MaxRange: 100, Validity: NoExpiry})
	var mu sync.Mutex
	top := int64(1_000_000)
	tag3.mu.Lock()
	tag3.lease = func(count int64) (int64, int64, string, error) {
		mu.Lock() // 1,000,000 from server a, then 1, 101, ... from b
		defer mu.Unlock()
		start, srv := top, "b"
		if start == 1_000_000 {
			top, srv = 1, "a"
		} else {
			top += count
		}
		return start, start + count, srv, nil
	}
	tag3.mu.Unlock()
	loc3 := tag3.Local()
	a3 := takeLocal(t, loc3, 20)
	b3 := take(t, tag3, 120)
	if a3[19] != 1_000_019 || b3[119] >= 1_000_000 {
		t.Fatalf("the test tests nothing: %d, then %d", a3[19], b3[119])
	}
	if v := takeLocal(t, loc3, 1)[0]; v >= 1_000_000 {
		t.Fatalf("the Local's next ID, %d, is of the range before the switch: "+
			"its block outlived it", v)
	}

	// The expiry: 20 IDs taken (a block held) before the range expires. A
	// machine too loaded to take them within the validity tries a longer
	// one.
	var c2 *Client
	var loc2 *Local
	for _, v := range []time.Duration{100 * time.Millisecond, time.Second, 5 * time.Second} {
		c2 = newClient(t, Options{Servers: []string{"http://127.0.0.1:9"}})
		tag2, _ := c2.Tag("orders", &TagOptions{MinRange: 1000, MaxRange: 1000,
			Validity: v})
		var l2 leases
		contiguous(tag2, &l2)
		loc2 = tag2.Local()
		ids := takeLocal(t, loc2, 20)
		if tag2.Stats().Dropped != 0 && v < 5*time.Second {
			continue // expired while the 20 were taken
		}
		if ids[19] != 20 {
			t.Fatalf("IDs %v", ids)
		}
		deadline := time.Now().Add(10*time.Second + v)
		for tag2.Stats().Dropped == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if next := takeLocal(t, loc2, 1)[0]; next <= 1000 {
			t.Fatalf("after the range expired: %d", next)
		}
		if d := tag2.Stats().Dropped; d != 980 {
			t.Fatalf("dropped %d, want 980: the 1,000 of the range less the 20 "+
				"handed out", d)
		}
		break
	}
	takeLocal(t, loc2, 5)
	c2.Close()
	if _, err := loc2.Next(); err == nil {
		t.Fatal("an ID from a Local after the close")
	} else {
		wantCode(t, err, CodeClosed, 0)
	}
}
