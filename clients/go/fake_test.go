// SPDX-License-Identifier: Apache-2.0

// Servers faked in the test's process (net/http/httptest on loopback):
// several on one in-memory store, each answering ranges from its own
// buffered segment as a real server does, naming their store or not,
// refusing sizes above their max_range, or answering what a test says.

package frond

import (
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memStore hands out segments of step IDs, in order, as leaf_alloc does.
type memStore struct {
	mu   sync.Mutex
	next int64
	step int64
}

func (m *memStore) segment() (int64, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next == 0 {
		m.next = 1
	}
	s := m.next
	m.next += m.step
	return s, m.next
}

type fakeServer struct {
	*httptest.Server
	st       *memStore
	id       string // the store it names; "" for none
	maxRange int64
	down     atomic.Bool             // answer 503
	answer   func() (string, string) // if set: the body and Frond-Store to send

	mu       sync.Mutex
	pos, end int64 // its buffered segment
	leased   leases
}

func newFake(t *testing.T, st *memStore, id string) *fakeServer {
	f := &fakeServer{st: st, id: id, maxRange: 1000000}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// load buffers the store's next segment now.
func (f *fakeServer) load() {
	f.mu.Lock()
	f.pos, f.end = f.st.segment()
	f.mu.Unlock()
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, code, msg string) {
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"code":%q,"message":%q}}`, code, msg)
	}
	if f.down.Load() {
		fail(503, "SEGMENT_UNAVAILABLE", "down")
		return
	}
	if f.answer != nil {
		body, store := f.answer()
		if store != "" {
			w.Header().Set("Frond-Store", store)
		}
		w.Write([]byte(body))
		return
	}
	n, err := strconv.ParseInt(r.URL.Query().Get("count"), 10, 64)
	if err != nil || n < 1 || n > f.maxRange {
		fail(400, "COUNT_INVALID", fmt.Sprintf("count must be an integer "+
			"in [1, %d]", f.maxRange))
		return
	}
	f.mu.Lock()
	if f.pos+n > f.end {
		f.pos, f.end = f.st.segment()
		for f.pos+n > f.end { // a range larger than a segment
			_, f.end = f.st.segment()
		}
	}
	start := f.pos
	f.pos += n
	f.leased.add(start, f.pos)
	f.mu.Unlock()
	store := ""
	if f.id != "" {
		w.Header().Set("Frond-Store", f.id)
		store = fmt.Sprintf(`,"store":%q`, f.id)
	}
	fmt.Fprintf(w, `{"tag":"orders","start":"%d","end":"%d","count":%d%s}`,
		start, f.pos, n, store)
}

const (
	storeX = "0123456789abcdef0123456789abcdef"
	storeY = "fedcba9876543210fedcba9876543210"
)

// Two servers of one store: b buffered its segment before a, so once a
// fails its ranges lie below a's. They are taken, IDs stay unique, and
// only the IDs the servers leased are handed out. Before, each of b's
// ranges was refused as BAD_RESPONSE.
func TestFakeFailoverOneStore(t *testing.T) {
	for _, named := range []bool{true, false} {
		t.Run(fmt.Sprint("store named ", named), func(t *testing.T) {
			st := &memStore{step: 1000}
			id := ""
			if named {
				id = storeX
			}
			a, b := newFake(t, st, id), newFake(t, st, id)
			b.load()
			servers := []string{a.URL, b.URL}
			if !named { // one server alone is trusted without a store
				servers = servers[:1]
			}
			c := newClient(t, Options{Servers: servers, Retries: 2})
			tag, _ := c.Tag("orders", &TagOptions{MinRange: 100, MaxRange: 100})
			ids := take(t, tag, 450)
			if named {
				a.down.Store(true)
			}
			ids = append(ids, take(t, tag, 2500)...)
			if named {
				a.down.Store(false)
				b.down.Store(true)
				ids = append(ids, take(t, tag, 500)...)
			}
			seen := map[int64]bool{}
			for _, v := range ids {
				if seen[v] {
					t.Fatalf("ID %d handed out twice", v)
				}
				seen[v] = true
				if !a.leased.has(v) && !b.leased.has(v) {
					t.Fatalf("ID %d was leased by no server", v)
				}
			}
			lower, hi := 0, int64(0)
			for _, v := range ids {
				if v < hi {
					lower++
				}
				if v > hi {
					hi = v
				}
			}
			if named && lower == 0 {
				t.Fatal("no failover to lower ranges")
			}
		})
	}
}

// Goroutines on one tag while its ranges come from two servers of one
// store, each in order, the two interleaved: ranges below the highest one
// are served under the lock, the others by the switch.
func TestSwitchHammerTwoServers(t *testing.T) {
	c := newClient(t, Options{Servers: []string{"http://127.0.0.1:9"}})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 1, MaxRange: 3, Validity: NoExpiry})
	l := leases{unordered: true}
	var mu sync.Mutex
	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	st := &memStore{step: 40}
	type buf struct{ pos, end int64 }
	bufs := map[string]*buf{"a": {}, "b": {}}
	tag.mu.Lock()
	tag.lease = func(count int64) (int64, int64, string, error) {
		mu.Lock()
		defer mu.Unlock()
		srv := "a"
		if rnd.Intn(4) == 0 {
			srv = "b"
		}
		bf := bufs[srv]
		if bf.pos+count > bf.end {
			bf.pos, bf.end = st.segment()
		}
		start := bf.pos
		bf.pos += count
		l.add(start, bf.pos)
		return start, bf.pos, srv, nil
	}
	tag.mu.Unlock()
	n := hammer(t, tag, &l, 8, 20000)
	t.Logf("%d IDs, %+v", n, tag.Stats())
}

// Servers of two stores hand out the same IDs: the second one's range is
// refused with STORE_MISMATCH naming both, and none of its IDs is used.
func TestFakeStoreMismatch(t *testing.T) {
	a := newFake(t, &memStore{step: 1000}, storeX)
	b := newFake(t, &memStore{step: 1000}, storeY)
	c := newClient(t, Options{Servers: []string{a.URL, b.URL}, Retries: 2})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 100, MaxRange: 100})
	ids := take(t, tag, 50)
	a.down.Store(true)
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		var v int64
		if v, err = tag.Next(); err == nil {
			ids = append(ids, v)
		}
	}
	e := wantCode(t, err, CodeStoreMismatch, 0)
	for _, s := range []string{a.URL, b.URL, storeX, storeY} {
		if !strings.Contains(e.Message, s) {
			t.Errorf("message %q does not name %s", e.Message, s)
		}
	}
	for _, v := range ids {
		if !a.leased.has(v) {
			t.Fatalf("ID %d is not from the first server", v)
		}
	}
	// A server that names no store, among several: refused too.
	old := newFake(t, &memStore{step: 1000}, "")
	c2 := newClient(t, Options{Servers: []string{old.URL, a.URL}, Retries: -1})
	tag2, _ := c2.Tag("orders", nil)
	_, err = tag2.Next()
	if e := wantCode(t, err, CodeStoreMismatch, 0); !strings.Contains(e.Message,
		"does not name its store") {
		t.Fatalf("message %q", e.Message)
	}
}

// A range's bounds are strings of decimal digits, nothing else.
func TestFakeBadRange(t *testing.T) {
	for _, body := range []string{
		`{"start":1,"end":101,"count":100}`,
		`{"start":"","end":"100","count":100}`,
		`{"start":"1_000","end":"1100","count":100}`,
		`{"start":"1993.7","end":"2093.7","count":100}`,
		`{"start":"+1","end":"101","count":100}`,
		`{"start":"1","end":"1e2","count":99}`,
		`{"start":"1","end":"101","count":100,"store":"XYZ"}`,
		`{"start":"1","end":"101","count":100,"store":7}`,
		`[1, 101]`,
	} {
		f := newFake(t, &memStore{step: 1000}, "")
		f.answer = func() (string, string) { return body, "" }
		c := newClient(t, Options{Servers: []string{f.URL}})
		tag, _ := c.Tag("orders", &TagOptions{MinRange: 100, MaxRange: 100})
		_, err := tag.Next()
		wantCode(t, err, CodeBadResponse, 0)
	}
	// The store in the body and in Frond-Store must agree.
	f := newFake(t, &memStore{step: 1000}, "")
	f.answer = func() (string, string) {
		return `{"start":"1","end":"101","count":100,"store":"` + storeX + `"}`, storeY
	}
	c := newClient(t, Options{Servers: []string{f.URL}})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 100, MaxRange: 100})
	_, err := tag.Next()
	wantCode(t, err, CodeBadResponse, 0)
}

// A server whose max_range is below the size asked for: the handle learns
// the bound from COUNT_INVALID and the call succeeds, within it from then
// on; failed loads do not grow the size.
func TestFakeMaxRange(t *testing.T) {
	f := newFake(t, &memStore{step: 1000}, storeX)
	f.maxRange = 400
	c := newClient(t, Options{Servers: []string{f.URL}})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 1000, MaxRange: 8000,
		Validity: NoExpiry})
	take(t, tag, 3000)
	settled(t, tag)
	starts, ends := f.leased.ranges()
	for i, s := range starts {
		if n := ends[i] - s; n > 400 {
			t.Fatalf("range %d of %d IDs", i, n)
		}
	}
	st := tag.Stats()
	if st.Calls != st.Ranges+1 {
		t.Fatalf("%+v: the bound was not kept after the first refusal", st)
	}
	// A message without the bound: the size halves until it is taken.
	g := newFake(t, &memStore{step: 1000}, "")
	g.maxRange = 300
	g.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n, _ := strconv.ParseInt(r.URL.Query().Get("count"), 10, 64); n > 300 {
			w.WriteHeader(400)
			w.Write([]byte(`{"error":{"code":"COUNT_INVALID","message":"too many"}}`))
			return
		}
		g.serve(w, r)
	})
	c2 := newClient(t, Options{Servers: []string{g.URL}})
	tag2, _ := c2.Tag("orders", &TagOptions{MinRange: 1000, MaxRange: 1000})
	take(t, tag2, 1000)
	starts, ends = g.leased.ranges()
	if s := ends[0] - starts[0]; s != 250 {
		t.Fatalf("first range of %d IDs, want 250", s)
	}
}

// Failed loads leave the size as it was: it adapts once per range used.
func TestFakeFailedLoads(t *testing.T) {
	f := newFake(t, &memStore{step: 100000}, "")
	c := newClient(t, Options{Servers: []string{f.URL}, Retries: -1})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 100, MaxRange: 100000,
		Validity: NoExpiry})
	take(t, tag, 100)
	f.down.Store(true)
	for i := 0; i < 8; i++ {
		if _, err := tag.Next(); err == nil {
			t.Fatal("an ID with the server down")
		}
	}
	f.down.Store(false)
	take(t, tag, 1)
	starts, ends := f.leased.ranges()
	if n := len(starts); ends[n-1]-starts[n-1] > 200 {
		t.Fatalf("the size grew with failed loads: %v %v", starts, ends)
	}
}

// stopping is a Transport whose next round trip ends its goroutine
// (runtime.Goexit, as t.FailNow does) or blocks until released, ignoring
// the request's context; any other is passed on.
type stopping struct {
	next    http.RoundTripper
	goexit  atomic.Int32
	block   atomic.Int32
	release chan struct{}
}

func (s *stopping) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.goexit.CompareAndSwap(1, 0) {
		runtime.Goexit()
	}
	if s.block.CompareAndSwap(1, 0) {
		<-s.release
	}
	return s.next.RoundTrip(r)
}

// A fetch whose goroutine stops under it ends all the same: the call
// waiting for it fails with UNAVAILABLE at once, and the next call
// fetches again. Before, the fetch stayed in flight and every later call
// waited on it for ever. A fetch that never ends (a Transport that
// ignores the context) holds a call no longer than the client's bound.
func TestFakeFetchStopped(t *testing.T) {
	f := newFake(t, &memStore{step: 100000}, "")
	tr := &stopping{next: http.DefaultTransport, release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(tr.release) }) }
	t.Cleanup(release) // a fetch held on failure ends with the test
	c := newClient(t, Options{Servers: []string{f.URL}, Retries: -1,
		Timeout: 200 * time.Millisecond, Transport: tr})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 100, MaxRange: 100,
		Validity: NoExpiry})
	tr.goexit.Store(1)
	done := make(chan error, 1)
	go func() { _, err := tag.Next(); done <- err }()
	select {
	case err := <-done:
		e := wantCode(t, err, CodeUnavailable, 0)
		if !strings.Contains(e.Message, "stopped") {
			t.Fatalf("message %q", e.Message)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a call waited 30 s on a fetch that had stopped")
	}
	take(t, tag, 150)
	// The next fetch (at the second range's preload point) blocks.
	tr.block.Store(1)
	t0 := time.Now()
	var err error
	for i := 0; i < 200 && err == nil; i++ {
		_, err = tag.Next()
	}
	wantCode(t, err, "SEGMENT_UNAVAILABLE", 0)
	if waited := time.Since(t0); waited > 30*time.Second {
		t.Fatalf("a call waited %v on a fetch that never ends", waited)
	}
	release()
	settled(t, tag) // the held fetch ends (its attempt timed out)
	take(t, tag, 1)
}

// A call that waited for a fetch and finds, once it holds the lock
// again, that another call installed the fetched range and that a later
// fetch (the preload) failed, takes an ID of that range: it still has
// IDs. Before, the call returned the later fetch's error.
func TestFakeWaitedRangeInstalled(t *testing.T) {
	c := newClient(t, Options{Servers: []string{"http://127.0.0.1:9"}})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 10, MaxRange: 10,
		Validity: NoExpiry})
	var fetches atomic.Int32
	woke, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(resume) }) }
	t.Cleanup(release) // a call held on failure ends with the test
	var held atomic.Bool
	tag.mu.Lock()
	tag.lease = func(count int64) (int64, int64, string, error) {
		if fetches.Add(1) == 1 {
			return 1, 11, "a", nil // [1, 10], its preload point 9
		}
		return 0, 0, "", newError(CodeUnavailable, "the preload fails")
	}
	tag.waited = func() {
		if held.CompareAndSwap(false, true) { // the first wait only
			close(woke)
			<-resume
		}
	}
	tag.mu.Unlock()
	type result struct {
		v   int64
		err error
	}
	done := make(chan result, 1)
	go func() { v, err := tag.Next(); done <- result{v, err} }()
	select {
	case <-woke:
	case <-time.After(30 * time.Second):
		t.Fatal("the first call did not wait for a fetch within 30 s")
	}
	// Meanwhile another call installs the range and takes it up to its
	// preload point: IDs 1 to 9, and the preload fails.
	ids := take(t, tag, 9)
	if ids[0] != 1 || ids[8] != 9 {
		t.Fatalf("IDs %v, want 1 to 9", ids)
	}
	settled(t, tag)
	if n := fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2: the test tests nothing", n)
	}
	release()
	select {
	case r := <-done:
		if r.err != nil || r.v != 10 {
			t.Fatalf("the call that waited got %d, %v; want 10, the ID its "+
				"range still had", r.v, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call that waited did not return within 30 s")
	}
}
