// SPDX-License-Identifier: Apache-2.0

package frond

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

func newClient(t *testing.T, opts Options) *Client {
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func wantCode(t *testing.T, err error, code string, status int) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want a *frond.Error %s, got %v", code, err)
	}
	if e.Code != code || e.Status != status {
		t.Fatalf("want %s (HTTP %d), got %s (HTTP %d): %v", code, status,
			e.Code, e.Status, err)
	}
	return e
}

// take draws n IDs from tag, failing the test on any error.
func take(t *testing.T, tag *Tag, n int) []int64 {
	t.Helper()
	return takeWith(t, tag.Next, n)
}

// takeWith draws n IDs from next (a Tag's Next or a Local's).
func takeWith(t *testing.T, next func() (int64, error), n int) []int64 {
	t.Helper()
	out := make([]int64, n)
	for i := range out {
		v, err := next()
		if err != nil {
			t.Fatalf("ID %d of %d: %v", i, n, err)
		}
		out[i] = v
	}
	return out
}

// settled waits for the tag's range fetch in flight, if any, to end. A
// fetch counts its call when it is sent and its range when the answer
// comes: a prefetch started by the last draws is still between the two.
// Once the draws have stopped, no fetch starts after it.
func settled(t *testing.T, tag *Tag) {
	tag.mu.Lock()
	ch := tag.inflight
	tag.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-time.After(60 * time.Second):
		t.Fatal("a range fetch still in flight after 60 s")
	}
}

func increasing(t *testing.T, what string, ids []int64) {
	t.Helper()
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("%s: ID %d (%d) is not above the one before (%d)",
				what, i, ids[i], ids[i-1])
		}
	}
}

func TestSnowflake(t *testing.T) {
	s := startServer(t, newStore(t, nil), "--format.b62", "base62")
	c := newClient(t, Options{Servers: []string{s.url()}})
	ctx := context.Background()
	id, err := c.Next(ctx)
	if err != nil || id <= 0 {
		t.Fatalf("Next: %d, %v", id, err)
	}
	ids, err := c.NextBatch(ctx, 5000)
	if err != nil || len(ids) != 5000 {
		t.Fatalf("NextBatch: %d IDs, %v", len(ids), err)
	}
	increasing(t, "batch", append([]int64{id}, ids...))
	f, err := c.Decode(ctx, strconv.FormatInt(id, 10), "")
	if err != nil || f["id"] != strconv.FormatInt(id, 10) || f["node"] == nil {
		t.Fatalf("Decode: %v, %v", f, err)
	}
	strs, err := c.Format(ctx, "b62", 3)
	if err != nil || len(strs) != 3 || len(strs[0]) != 11 {
		t.Fatalf("Format: %v, %v", strs, err)
	}
	f, err = c.Decode(ctx, strs[0], "b62")
	if err != nil || f["id"] == nil {
		t.Fatalf("Decode %s: %v, %v", strs[0], f, err)
	}
}

func TestBadInput(t *testing.T) {
	s := startServer(t, newStore(t, map[string]int{"orders": 1000}))
	c := newClient(t, Options{Servers: []string{s.url()}})
	ctx := context.Background()
	for _, name := range []string{"", string(make([]byte, 129)), "a\x01b", "\xff"} {
		_, err := c.Tag(name, nil)
		wantCode(t, err, "TAG_INVALID", 0)
	}
	_, err := c.Tag("orders", &TagOptions{Preload: 1.5})
	wantCode(t, err, CodeInvalid, 0)
	_, err = c.Tag("orders", &TagOptions{MinRange: 10, MaxRange: 5})
	wantCode(t, err, CodeInvalid, 0)
	a, _ := c.Tag("orders", nil)
	b, _ := c.Tag("orders", nil)
	if a != b {
		t.Fatal("two handles for one tag")
	}
	_, err = c.Tag("orders", &TagOptions{MinRange: 5})
	wantCode(t, err, CodeInvalid, 0)
	_, err = New(Options{Servers: []string{"127.0.0.1:8080"}})
	wantCode(t, err, CodeInvalid, 0)
	_, err = New(Options{Servers: []string{"http://h:1/path"}})
	wantCode(t, err, CodeInvalid, 0)

	// The server's refusals come back with their codes, never retried.
	before := c.Stats().Calls
	nope, _ := c.Tag("nope", nil)
	_, err = nope.Next()
	wantCode(t, err, "TAG_NOT_FOUND", 404)
	if n := c.Stats().Calls - before; n != 1 {
		t.Fatalf("a 404 was sent %d times", n)
	}
	_, err = c.NextBatch(ctx, 0)
	wantCode(t, err, "COUNT_INVALID", 0)
	_, err = c.NextBatch(ctx, 10000000)
	wantCode(t, err, "COUNT_INVALID", 400)
	_, err = c.Decode(ctx, "not an id", "")
	wantCode(t, err, "ID_INVALID", 400)
	_, err = c.Format(ctx, "nope", 1)
	wantCode(t, err, "FORMAT_NOT_FOUND", 404)
	if !errors.Is(err, &Error{Code: "FORMAT_NOT_FOUND"}) || CodeOf(err) != "FORMAT_NOT_FOUND" {
		t.Fatal("errors.Is and CodeOf do not see the code")
	}
	// A range too large for the server: its COUNT_INVALID, not a retry.
	big, _ := c.Tag("orders2", &TagOptions{MinRange: 2000000, MaxRange: 2000000})
	_, err = big.Next()
	if CodeOf(err) != "TAG_NOT_FOUND" && CodeOf(err) != "COUNT_INVALID" {
		t.Fatalf("a range above max_range: %v", err)
	}
}

func TestFromEnvironment(t *testing.T) {
	t.Setenv("FROND_SERVERS", " http://127.0.0.1:1 ,http://127.0.0.1:2")
	c := newClient(t, Options{})
	if got := c.Servers(); len(got) != 2 || got[1] != "http://127.0.0.1:2" {
		t.Fatalf("servers from FROND_SERVERS: %v", got)
	}
	t.Setenv("FROND_SERVERS", "")
	c = newClient(t, Options{})
	if got := c.Servers(); len(got) != 1 || got[0] != DefaultServer {
		t.Fatalf("default servers: %v", got)
	}
}

// The leased tag across goroutines: no ID twice, each goroutine's IDs
// increasing, ranges growing from MinRange, and few server calls.
func TestTagGoroutines(t *testing.T) {
	s := startServer(t, newStore(t, map[string]int{"orders": 1000}))
	c := newClient(t, Options{Servers: []string{s.url()}})
	tag, err := c.Tag("orders", &TagOptions{MinRange: 100, MaxRange: 5000})
	if err != nil {
		t.Fatal(err)
	}
	const G, N = 8, 40000
	got := make([][]int64, G)
	var wg sync.WaitGroup
	errs := make(chan error, G)
	for g := 0; g < G; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			ids := make([]int64, 0, N)
			for i := 0; i < N; i++ {
				v, err := tag.Next()
				if err != nil {
					errs <- err
					return
				}
				ids = append(ids, v)
			}
			got[g] = ids
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := make(map[int64]bool, G*N)
	for g, ids := range got {
		increasing(t, fmt.Sprintf("goroutine %d", g), ids)
		for _, v := range ids {
			if seen[v] {
				t.Fatalf("ID %d twice", v)
			}
			seen[v] = true
		}
	}
	settled(t, tag)
	st := tag.Stats()
	if st.Leased < G*N || st.Ranges < 2 || st.Calls != st.Ranges {
		t.Fatalf("stats %+v", st)
	}
	// Ranges double from 100 while they last less than the target:
	// far fewer calls than 320,000 / 100.
	if st.Ranges > 200 {
		t.Fatalf("%d ranges for %d IDs: the size does not adapt", st.Ranges, G*N)
	}
}

// TestChildProcess is the child process of TestTwoProcesses: it writes n IDs of
// a tag, one a line, to a file.
func TestChildProcess(t *testing.T) {
	if os.Getenv("GO_FROND_CHILD") != "1" {
		t.Skip("run by TestTwoProcesses")
	}
	n, _ := strconv.Atoi(os.Getenv("GO_FROND_N"))
	c := newClient(t, Options{Servers: []string{os.Getenv("GO_FROND_URL")}})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 50, MaxRange: 2000})
	f, err := os.Create(os.Getenv("GO_FROND_OUT"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for _, v := range take(t, tag, n) {
		fmt.Fprintln(w, v)
	}
	w.Flush()
	f.Close()
}

func TestTwoProcesses(t *testing.T) {
	s := startServer(t, newStore(t, map[string]int{"orders": 1000}))
	const P, N = 2, 100000
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for p := 0; p < P; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "GO_FROND_CHILD=1", "GO_FROND_URL="+s.url(),
			"GO_FROND_N="+strconv.Itoa(N),
			"GO_FROND_OUT="+filepath.Join(dir, strconv.Itoa(p)))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	seen := map[int64]bool{}
	for p := 0; p < P; p++ {
		f, err := os.Open(filepath.Join(dir, strconv.Itoa(p)))
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			v, _ := strconv.ParseInt(sc.Text(), 10, 64)
			ids = append(ids, v)
		}
		f.Close()
		if len(ids) != N {
			t.Fatalf("process %d wrote %d IDs, not %d", p, len(ids), N)
		}
		increasing(t, fmt.Sprintf("process %d", p), ids)
		for _, v := range ids {
			if seen[v] {
				t.Fatalf("ID %d from both processes", v)
			}
			seen[v] = true
		}
	}
}

// A server stopped and started again: the handle serves from its buffer
// meanwhile, then leases from the restarted server, above everything.
func TestServerRestart(t *testing.T) {
	s := startServer(t, newStore(t, map[string]int{"orders": 1000}))
	c := newClient(t, Options{Servers: []string{s.url()}, Timeout: 500 * time.Millisecond})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 5000, MaxRange: 5000})
	ids := take(t, tag, 10) // one range of 5,000 leased
	s.stop()
	ids = append(ids, take(t, tag, 3000)...) // from the buffer alone
	s.start()
	ids = append(ids, take(t, tag, 20000)...)
	increasing(t, "across a restart", ids)
	if st := tag.Stats(); st.Ranges < 4 {
		t.Fatalf("stats %+v: no range from the restarted server", st)
	}
}

// Two servers on one store, the first killed mid-run: the handle goes on
// from its buffer and the other server, without an error. The other
// server's ranges may lie below the first's (each answers from its own
// buffered segment): IDs stay unique, not increasing across the kill.
func TestServerKilled(t *testing.T) {
	store := newStore(t, map[string]int{"orders": 1000})
	a := startServer(t, store)
	b := startServer(t, store)
	c := newClient(t, Options{Servers: []string{a.url(), b.url()},
		Timeout: time.Second})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 200, MaxRange: 200})
	if refusedUnnamed(t, a.url(), tag) {
		return
	}
	const G, N = 4, 20000
	var wg sync.WaitGroup
	got := make([][]int64, G)
	errs := make(chan error, G)
	killed := make(chan struct{})
	for g := 0; g < G; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < N; i++ {
				if g == 0 && i == N/4 {
					a.kill()
					close(killed)
				}
				v, err := tag.Next()
				if err != nil {
					errs <- err
					return
				}
				got[g] = append(got[g], v)
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("after the kill: %v", err)
	}
	<-killed
	seen := map[int64]bool{}
	for g := range got {
		for _, v := range got[g] {
			if seen[v] {
				t.Fatalf("ID %d twice", v)
			}
			seen[v] = true
		}
	}
	if st := c.Stats(); st.Failovers < 1 {
		t.Fatalf("stats %+v: no failover", st)
	}
}

// A buffered range older than the validity is dropped: the next ID
// comes from a new range, above it, and the skipped IDs are counted.
func TestValidity(t *testing.T) {
	s := startServer(t, newStore(t, map[string]int{"orders": 1000}))
	c := newClient(t, Options{Servers: []string{s.url()}})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 1000, Validity: 300 * time.Millisecond})
	first := take(t, tag, 1)[0]
	deadline := time.Now().Add(10 * time.Second)
	for tag.Stats().Dropped == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if d := tag.Stats().Dropped; d != 999 {
		t.Fatalf("dropped %d IDs, want 999", d)
	}
	next := take(t, tag, 1)[0]
	if next < first+1000 {
		t.Fatalf("after the validity: %d, not above the dropped range [%d, %d)",
			next, first, first+1000)
	}
}

// Every call is bounded: a server that accepts and never answers is a
// TIMEOUT; with a second server, the call fails over to it.
func TestTimeouts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, conn) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	silent := "http://" + l.Addr().String()
	c := newClient(t, Options{Servers: []string{silent},
		Timeout: 200 * time.Millisecond, Retries: 1})
	t0 := time.Now()
	_, err = c.Next(context.Background())
	wantCode(t, err, CodeTimeout, 0)
	tag, _ := c.Tag("orders", nil)
	_, err = tag.Next()
	wantCode(t, err, CodeTimeout, 0)
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("two calls of 2 attempts of 200 ms took %v", d)
	}
	// The caller's context bounds a call too.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Next(ctx)
	wantCode(t, err, CodeTimeout, 0)

	// Nothing listening: UNAVAILABLE.
	dead := freePort(t)
	c2 := newClient(t, Options{Servers: []string{fmt.Sprintf("http://127.0.0.1:%d", dead)},
		Retries: 2})
	_, err = c2.Next(context.Background())
	wantCode(t, err, CodeUnavailable, 0)
	if st := c2.Stats(); st.Calls != 3 || st.Failures != 3 {
		t.Fatalf("stats %+v: want 3 attempts", st)
	}

	s := startServer(t, newStore(t, map[string]int{"orders": 1000}))
	c3 := newClient(t, Options{Servers: []string{silent, s.url()},
		Timeout: 200 * time.Millisecond})
	if _, err := c3.Next(context.Background()); err != nil {
		t.Fatalf("failover from a silent server: %v", err)
	}
	tag3, _ := c3.Tag("orders", nil)
	if !refusedUnnamed(t, s.url(), tag3) {
		take(t, tag3, 10)
	}
}

func TestClose(t *testing.T) {
	s := startServer(t, newStore(t, map[string]int{"orders": 1000}))
	c := newClient(t, Options{Servers: []string{s.url()}})
	tag, _ := c.Tag("orders", nil)
	take(t, tag, 10)
	c.Close()
	_, err := tag.Next()
	wantCode(t, err, CodeClosed, 0)
	_, err = c.Next(context.Background())
	wantCode(t, err, CodeClosed, 0)
	if st := tag.Stats(); st.Dropped != st.Leased-10 {
		t.Fatalf("stats %+v: the buffers were not dropped", st)
	}
}

// Servers on different stores hand out the same IDs: once the first is
// gone, the other's range is refused with STORE_MISMATCH.
func TestRangeOrder(t *testing.T) {
	store := newStore(t, map[string]int{"orders": 1000})
	a := startServer(t, store)
	other := startServer(t, newStore(t, map[string]int{"orders": 1000}))
	c := newClient(t, Options{Servers: []string{a.url(), other.url()}, Retries: 1})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 1000, MaxRange: 1000})
	if refusedUnnamed(t, a.url(), tag) {
		return
	}
	take(t, tag, 1) // [1, 1001) from a's store
	a.kill()
	// other's store is another: its range is refused once the buffered
	// range is used up.
	var err error
	n := 1
	for ; n <= 2000 && err == nil; n++ {
		_, err = tag.Next()
	}
	wantCode(t, err, CodeStoreMismatch, 0)
	if n-1 != 1000 {
		t.Fatalf("the refusal came at call %d, not after the 1,000 IDs leased", n-1)
	}
	if st := tag.Stats(); st.Ranges != 1 || st.Leased != 1000 {
		t.Fatalf("stats %+v", st)
	}
}

func FuzzParseRange(f *testing.F) {
	f.Add("1001", "2001", int64(1000), int64(1000))
	f.Add("-1", "5", int64(6), int64(10))
	f.Add("9223372036854775807", "1", int64(1), int64(1))
	f.Add("1", "99999999999999999999", int64(1), int64(1))
	f.Fuzz(func(t *testing.T, s, e string, n, asked int64) {
		start, end, err := parseRange(s, e, n, asked)
		if err == nil && (start < 1 || end <= start || end-start != n || n > asked) {
			t.Fatalf("accepted %q %q %d %d", s, e, n, asked)
		}
		if err != nil && CodeOf(err) != CodeBadResponse {
			t.Fatalf("error code %v", err)
		}
	})
}

// A 503 moves the call to the next server; from every server, it is the
// server's code after the retries.
func TestFailoverOn503(t *testing.T) {
	none := startServer(t, "none")
	good := startServer(t, newStore(t, map[string]int{"orders": 1000}))
	c := newClient(t, Options{Servers: []string{none.url(), good.url()}})
	tag, _ := c.Tag("orders", nil)
	if refusedUnnamed(t, good.url(), tag) {
		return
	}
	take(t, tag, 10)
	if st := c.Stats(); st.Failovers != 1 || st.Failures != 1 {
		t.Fatalf("stats %+v: want one 503 and one failover", st)
	}
	c2 := newClient(t, Options{Servers: []string{none.url()}, Retries: 2})
	tag2, _ := c2.Tag("orders", nil)
	_, err := tag2.Next()
	wantCode(t, err, "SEGMENT_UNAVAILABLE", 503)
	if st := c2.Stats(); st.Calls != 3 {
		t.Fatalf("stats %+v: a 503 was not tried 3 times", st)
	}
}

// Stats taken while ranges arrive never count a range without its IDs:
// a reader that sees the range sees what it leased (TestRangeSize waits
// on Ranges and then reads Leased). Every range here holds 10 IDs.
func TestStatsRangeWithItsIDs(t *testing.T) {
	s := startServer(t, newStore(t, map[string]int{"orders": 1000}))
	c := newClient(t, Options{Servers: []string{s.url()}})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 10, MaxRange: 10})
	done := make(chan struct{})
	var once sync.Once
	stop := func() { once.Do(func() { close(done) }) }
	defer stop() // the reader ends however the test does
	torn := make(chan TagStats, 1)
	go func() {
		defer close(torn)
		for {
			select {
			case <-done:
				return
			default:
			}
			if st := tag.Stats(); st.Leased < 10*st.Ranges {
				torn <- st
				return
			}
		}
	}()
	take(t, tag, 20000)
	stop()
	if st, ok := <-torn; ok {
		t.Fatalf("stats %+v: a range counted without its IDs", st)
	}
	if st := tag.Stats(); st.Ranges < 2000 || st.Leased < 10*st.Ranges {
		t.Fatalf("stats %+v: not the 2,000 ranges of 10 IDs read", st)
	}
}

// The range size follows the rate: it doubles while ranges are fetched
// less than Target apart, up to MaxRange, stays between Target and twice
// Target, and halves beyond, down to MinRange (on a clock the test moves).
func TestRangeSize(t *testing.T) {
	s := startServer(t, newStore(t, map[string]int{"orders": 1000}))
	c := newClient(t, Options{Servers: []string{s.url()}})
	tag, _ := c.Tag("orders", &TagOptions{MinRange: 100, MaxRange: 800,
		Target: time.Minute, Validity: NoExpiry})
	var mu sync.Mutex
	clock := time.Unix(1e9, 0)
	tag.mu.Lock()
	tag.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	tag.mu.Unlock()
	var sizes []int64
	for i, gap := range []time.Duration{0, time.Second, time.Second, time.Second,
		time.Second, 90 * time.Second, 3 * time.Minute, 3 * time.Minute,
		3 * time.Minute, 3 * time.Minute} {
		mu.Lock()
		clock = clock.Add(gap)
		mu.Unlock()
		before := tag.Stats().Leased
		// Take IDs until the next range is leased: at the current one's
		// preload point.
		for n := 0; tag.Stats().Ranges == int64(i); n++ {
			if n == 10000 {
				t.Fatalf("no range %d after 10,000 IDs", i+1)
			}
			take(t, tag, 1)
		}
		sizes = append(sizes, tag.Stats().Leased-before)
	}
	want := fmt.Sprint([]int64{100, 200, 400, 800, 800, 800, 400, 200, 100, 100})
	if fmt.Sprint(sizes) != want {
		t.Fatalf("range sizes %v, want %v", sizes, want)
	}
}
