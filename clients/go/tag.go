// SPDX-License-Identifier: Apache-2.0

package frond

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// Defaults of TagOptions.
const (
	DefaultPreload  = 0.2
	DefaultMinRange = 1000
	DefaultMaxRange = 1000000
	DefaultTarget   = 10 * time.Second
	DefaultValidity = 60 * time.Second
	// NoExpiry as TagOptions.Validity keeps a buffered range forever.
	NoExpiry time.Duration = -1
)

// TagOptions configure a Tag; the zero value is the defaults.
type TagOptions struct {
	// Preload: when what remains of the current range falls below this
	// fraction of it, the next range is fetched in the background
	// (0: DefaultPreload; else in (0, 1)).
	Preload float64
	// MinRange, MaxRange bound the size of a leased range, which starts
	// at MinRange, doubles when a range lasted less than Target and
	// halves when it lasted more than twice Target (0: the defaults;
	// MaxRange at most the server's max_range).
	MinRange, MaxRange int64
	Target             time.Duration
	// Validity: a buffered range leased longer ago is dropped, its IDs
	// skipped (0: DefaultValidity; NoExpiry: never).
	Validity time.Duration
}

// span is a leased range [start, end], both inclusive, as the tag's lock
// keeps it; Next never reads it.
type span struct {
	start, end int64
	preloadAt  int64 // the ID whose taker starts the next fetch
	leasedAt   time.Time
	timer      *time.Timer // the validity's, once current
	// locked: served by the slow path under the lock from pos, its IDs
	// never reached through cursor and bound (see Tag).
	locked bool
	pos    int64
}

// Tag is a segment tag's handle: Next hands out the tag's IDs from
// ranges leased from the server. Safe for use by any number of
// goroutines; each goroutine sees its IDs strictly increase.
//
// The current range lives in the handle itself, so that Next is one
// atomic load, one atomic add and one comparison on fields it reaches
// without a pointer: bound on a line that only range switches write,
// cursor on a line of its own (64 bytes apart: never on one line,
// wherever the handle lands). The bound is the current range's last ID,
// or, until the preload point is taken, the ID before it: the first
// caller past it takes the slow path, starts the fetch of the next range
// and raises the bound to the range's end.
//
// Why a switch needs no lock on Next's side: a switch, under mu, stores
// first cursor = S2-1, then the bound B2 (in [S2, E2]), and the ranges so
// installed strictly increase (S2 > E1). Servers of one store answer from
// their own buffers, so after a failover a range may lie below those
// taken before; such a range is not installed in cursor and bound (a
// caller holding an old bound could take an ID above its end): it is
// served by the slow path under mu, while cursor and bound stay where
// they are, the cursor past every bound, so Next refuses everything.
// Next loads the bound before its add. One that loaded the old bound
// B1 <= E1 and adds on the new cursor gets v >= S2 > E1 and takes the
// slow path. One that loaded B2 saw the cursor store before it (Go's
// atomics are sequentially consistent), so its add returns at least S2.
// Adds before the cursor store return old-range values, accepted only
// when at most B1. The slow path accepts a refused v only when the bound
// it loaded is the current range's (bounds lie in their range, and
// ranges do not overlap) and v is at most that range's end: then v was
// taken after the range's cursor store and before the next's. An ID is
// handed out at most once and only from a range the server leased; IDs
// may be skipped. The comparisons are unsigned, so that a cursor run
// past the top of int64 by callers refused over and over is refused too.
type Tag struct {
	_      [64]byte
	bound  atomic.Int64 // Next accepts up to this ID (0: no range yet)
	epoch  atomic.Int64 // moves on each switch, expiry and close (see Local)
	_      [48]byte
	cursor atomic.Int64 // the last ID taken: Next's add returns the next
	_      [56]byte
	c      *Client
	name   string
	opts   TagOptions

	mu        sync.Mutex       // guards what follows, and every store to bound and cursor but Next's add
	cur       *span            // the current range, nil before the first
	next      *span            // the prefetched range, if any
	inflight  chan struct{}    // closed when the running fetch ends
	fetchErr  error            // how the last fetch ended
	hiEnd     map[string]int64 // per server: the end of its last range, exclusive
	hotEnd    int64            // the end of the highest range in cursor and bound, exclusive
	size      int64            // the size of the next range asked for
	maxSize   int64            // the server's max_range, once it refused a size (0: unknown)
	installs  int64            // ranges made current
	sizedAt   int64            // installs when the size was last adapted
	lastFetch time.Time
	closed    bool
	now       func() time.Time // the clock of the sizing: time.Now, or a test's
	// lease asks for count IDs: [start, end) and the server that gave
	// them, or an error (c.lease, or a test's). Set before the first Next.
	lease func(count int64) (start, end int64, srv string, err error)
	// switching, if a test sets it, runs between a switch's stores.
	switching func()
	// waited, if a test sets it, runs when a call that waited for a fetch
	// stops waiting, before it takes mu again.
	waited func()

	calls, ranges, leased, dropped atomic.Int64
}

// Tag returns the handle of a segment tag, the same one for the same
// name (opts: nil for the defaults; options other than the first call's
// are an Error INVAL). It calls no server: the first Next leases the
// first range.
func (c *Client) Tag(name string, opts *TagOptions) (*Tag, error) {
	if err := checkTag(name); err != nil {
		return nil, err
	}
	o := TagOptions{}
	if opts != nil {
		o = *opts
	}
	if err := o.fill(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, newError(CodeClosed, "the client is closed")
	}
	if t := c.tags[name]; t != nil {
		if opts != nil && o != t.opts {
			return nil, newError(CodeInvalid, "tag %q already has a handle "+
				"with other options", name)
		}
		return t, nil
	}
	// end = cursor = 0: the first Next takes the slow path.
	t := &Tag{c: c, name: name, opts: o, size: o.MinRange, now: time.Now,
		hiEnd: map[string]int64{}}
	t.lease = func(count int64) (int64, int64, string, error) {
		return c.lease(name, count, &t.calls)
	}
	c.tags[name] = t
	return t, nil
}

func (o *TagOptions) fill() error {
	if o.Preload == 0 {
		o.Preload = DefaultPreload
	}
	if o.MinRange == 0 {
		o.MinRange = DefaultMinRange
	}
	if o.MaxRange == 0 {
		o.MaxRange = DefaultMaxRange
	}
	if o.Target == 0 {
		o.Target = DefaultTarget
	}
	if o.Validity == 0 {
		o.Validity = DefaultValidity
	}
	switch {
	case !(o.Preload > 0 && o.Preload < 1):
		return newError(CodeInvalid, "preload %v is not in (0, 1)", o.Preload)
	case o.MinRange < 1 || o.MaxRange < o.MinRange:
		return newError(CodeInvalid, "range sizes [%d, %d] are not 1 <= "+
			"min <= max", o.MinRange, o.MaxRange)
	case o.Target < 0:
		return newError(CodeInvalid, "target %v is negative", o.Target)
	case o.Validity < 0 && o.Validity != NoExpiry:
		return newError(CodeInvalid, "validity %v is negative", o.Validity)
	}
	return nil
}

// checkTag refuses what the server would (1 to 128 bytes of UTF-8
// without control characters), before any call.
func checkTag(name string) error {
	if name == "" || len(name) > 128 || !utf8.ValidString(name) {
		return newError("TAG_INVALID", "tag %q is not 1 to 128 bytes of UTF-8", name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return newError("TAG_INVALID", "tag %q holds a control character", name)
		}
	}
	return nil
}

// Name returns the tag's name.
func (t *Tag) Name() string { return t.name }

// Next returns the tag's next ID. While the current range lasts this is
// one atomic load, one atomic add and one comparison; the goroutine that
// takes the preload point starts the fetch of the next range in the
// background, and the one that finds the range used up switches to the
// next (or waits for it, within the client's timeout and retries).
func (t *Tag) Next() (int64, error) {
	b := t.bound.Load() // before the add: see Tag
	v := t.cursor.Add(1)
	if uint64(v) <= uint64(b) {
		return v, nil
	}
	return t.slow(v, v, b, nil, 0)
}

// blockMax is the most IDs a Local takes in one add.
const blockMax = 16

// Local is one goroutine's share of a Tag, for a hot loop: its Next
// takes the tag's IDs in blocks (one atomic add for 1, 2, 4, ... up to
// 16 IDs) and hands them out with no atomic operation, where Tag.Next
// pays a locked add per ID (about 6 ns on today's x86 CPUs, more when
// goroutines on several cores share the tag). Not safe for concurrent
// use: one Local per goroutine, each from Tag.Local.
//
// A block is taken exactly as Tag.Next takes one ID (the bound loaded
// before the add; see Tag): every ID of the block up to the bound, or up
// to the range's end when the bound is the current range's, belongs to
// that range and to this Local alone; the rest is skipped. A block never
// outlives its range: a switch, an expiry and a close move the tag's
// epoch after their cursor store, and the next call drops what the block
// holds (counted in the tag's dropped IDs). A Local's IDs strictly
// increase while one server serves, and are unique among every Local
// and Next of the tag; a Local left unused keeps at most 15 IDs of the
// current range unissued. A Local must not be copied (go vet flags a
// copy): the copy would hand out the same block again.
type Local struct {
	_                       noCopy
	t                       *Tag
	next, last, epoch, size int64
}

// noCopy makes go vet's copylocks check flag a Local copied by value.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// Local returns a new goroutine-owned handle on the tag.
func (t *Tag) Local() *Local { return &Local{t: t, next: 1, size: 1} }

// Next returns the tag's next ID from the Local's block, or takes the
// next block.
func (l *Local) Next() (int64, error) {
	if v := l.next; v <= l.last && l.epoch == l.t.epoch.Load() {
		l.next = v + 1
		return v, nil
	}
	return l.refill()
}

//go:noinline
func (l *Local) refill() (int64, error) {
	t := l.t
	if l.next <= l.last { // left from an older epoch
		t.dropped.Add(l.last - l.next + 1)
		l.last, l.size = l.next-1, 1
	}
	e := t.epoch.Load()          // before the add: a later switch moves it
	b := t.bound.Load()          // before the add: see Tag
	last := t.cursor.Add(l.size) // the block is [v, last]
	v := last - l.size + 1
	if uint64(last) <= uint64(b) && uint64(v) <= uint64(b) {
		return l.keep(v, last, e), nil
	}
	return t.slow(v, last, b, l, e)
}

// keep makes [v+1, last] the block under epoch e and returns v.
func (l *Local) keep(v, last, e int64) int64 {
	l.next, l.last, l.epoch = v+1, last, e
	if l.size < blockMax {
		l.size *= 2
	}
	return v
}

// TagStats counts one handle's calls and ranges.
type TagStats struct {
	Calls   int64 // range requests sent, every attempt
	Ranges  int64 // ranges leased
	Leased  int64 // IDs in them
	Dropped int64 // leased IDs skipped: expired, closed, refused
}

// Stats returns the handle's counts. Ranges is read before Leased, which
// fetch adds first: a range counted here has its IDs counted too.
func (t *Tag) Stats() TagStats {
	return TagStats{Calls: t.calls.Load(), Ranges: t.ranges.Load(),
		Leased: t.leased.Load(), Dropped: t.dropped.Load()}
}

// fetchLocked starts a fetch of the next range unless one runs or is
// there. Needs t.mu.
func (t *Tag) fetchLocked() {
	if t.inflight != nil || t.next != nil || t.closed {
		return
	}
	now := t.now()
	// The size adapts once per range used: a fetch tried again after a
	// failure asks for the same size.
	if t.lastFetch.IsZero() || t.sizedAt != t.installs {
		t.adapt(now)
	}
	if t.maxSize > 0 && t.size > t.maxSize {
		t.size = t.maxSize
	}
	ch := make(chan struct{})
	t.inflight = ch
	go t.fetch(t.size, ch)
}

// adapt sizes the next range by the time since the last sizing. Needs t.mu.
func (t *Tag) adapt(now time.Time) {
	if !t.lastFetch.IsZero() {
		since := now.Sub(t.lastFetch)
		if since < t.opts.Target && t.size < t.opts.MaxRange {
			t.size *= 2
		} else if since > 2*t.opts.Target && t.size > t.opts.MinRange {
			t.size /= 2
		}
		if t.size > t.opts.MaxRange {
			t.size = t.opts.MaxRange
		}
		if t.size < t.opts.MinRange {
			t.size = t.opts.MinRange
		}
	}
	t.lastFetch = now
	t.sizedAt = t.installs
}

// countBound reads the bound a COUNT_INVALID names ("... in [1, 4000]").
var countBound = regexp.MustCompile(`\[1, ?([0-9]{1,19})\]`)

// leaseWithin leases at most count IDs. A server that refuses the size
// as above its max_range (COUNT_INVALID) teaches the handle its bound:
// the one its message names, else half the size; the lease is tried
// again within it at once.
func (t *Tag) leaseWithin(count int64) (int64, int64, string, error) {
	for i := 0; i < 64; i++ {
		start, end, srv, err := t.lease(count)
		e, ok := err.(*Error)
		if !ok || e.Code != "COUNT_INVALID" || e.Status != http.StatusBadRequest ||
			count <= 1 {
			return start, end, srv, err
		}
		bound := int64(0)
		if m := countBound.FindStringSubmatch(e.Message); m != nil {
			bound, _ = strconv.ParseInt(m[1], 10, 64)
		}
		if bound >= 1 && bound < count {
			count = bound
		} else {
			count /= 2
		}
		t.mu.Lock()
		t.maxSize = count
		if t.size > count {
			t.size = count
		}
		t.mu.Unlock()
	}
	return 0, 0, "", newError("COUNT_INVALID", "no range size of tag %q the "+
		"server takes", t.name)
}

// fetchGrace: how long past its deadline a call waits for a fetch that
// has not ended.
const fetchGrace = time.Second

// fetch leases count IDs and offers them as the next range. It ends
// whatever happens: a fetch stopped under it (runtime.Goexit in a
// Transport; a panic, which then goes on) still clears inflight and wakes
// the calls waiting, which fail with UNAVAILABLE, and the next call
// fetches again. A fetch left in flight would stop every later one.
func (t *Tag) fetch(count int64, ch chan struct{}) {
	var start, end int64
	var srv string
	err := error(newError(CodeUnavailable, "the range fetch of tag %q "+
		"stopped before it ended", t.name))
	defer func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.offer(start, end, srv, err, ch)
	}()
	start, end, srv, err = t.leaseWithin(count)
}

// offer ends a fetch (t.mu held): its range as the next one, or its error
// kept for the calls that waited for it.
func (t *Tag) offer(start, end int64, srv string, err error, ch chan struct{}) {
	if err == nil {
		switch hi, seen := t.hiEnd[srv]; {
		case t.closed:
			t.dropped.Add(end - start)
		case seen && start < hi:
			// A server's ranges increase; ranges of two servers of one
			// store are unique but not compared (see Tag).
			t.dropped.Add(end - start)
			err = &Error{Code: CodeBadResponse, Server: srv, Message: fmt.Sprintf(
				"range [%d, %d) of tag %q is below %d, the end of a range "+
					"the same server leased before: dropped", start, end,
				t.name, hi)}
		default:
			n := &span{start: start, end: end - 1, leasedAt: time.Now()}
			n.preloadAt = end - int64(float64(end-start)*t.opts.Preload)
			if n.preloadAt >= end {
				n.preloadAt = end - 1
			}
			t.next = n
			t.hiEnd[srv] = end
			// The IDs first: Stats reads Ranges before Leased, so that
			// a reader that sees the range sees its IDs too.
			t.leased.Add(end - start)
			t.ranges.Add(1)
		}
	}
	t.fetchErr = err
	t.inflight = nil
	close(ch)
}

// slow serves an ID that Next refused: v, taken from the cursor after
// loading bound b. It is the preload point, or the range is used up,
// expired or closed: start the next fetch, switch to the prefetched
// range, or fetch one and wait for it. Out of line, to keep Next small.
//
//go:noinline
func (t *Tag) slow(v, last, b int64, l *Local, e int64) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	deadline := time.Now().Add(t.c.bound())
	for {
		if t.closed {
			return 0, newError(CodeClosed, "the client is closed")
		}
		if n := t.cur; l != nil && uint64(v) <= uint64(b) &&
			(n == nil || n.locked || b < n.start || b > n.end) {
			// A block that starts at or below a bound no longer the
			// current range's: good up to that bound (see Tag). Under the
			// current range's bound, the case below takes it.
			return l.keep(v, b, e), nil
		}
		if n := t.cur; n != nil && n.locked {
			// A range below one installed before: served here.
			if n.pos <= n.end {
				id := n.pos
				n.pos++
				if id >= n.preloadAt {
					t.fetchLocked()
				}
				return id, nil
			}
		} else {
			// v is good if b is the current range's bound and v is not
			// past the range's end (see Tag): then v is at or past the
			// preload point.
			if n != nil && b >= n.start && b <= n.end && uint64(v) <= uint64(n.end) {
				if b < n.end {
					t.fetchLocked()
					t.bound.Store(n.end)
				}
				if l != nil {
					return l.keep(v, minU(last, n.end), e), nil
				}
				return v, nil
			}
			// Under mu, the bound is the current range's: the cursor is
			// past its end, or the first case takes v.
			b = t.bound.Load()
			v = t.cursor.Add(1)
			last = v // one ID taken now: a block's others are skipped
			if uint64(v) <= uint64(b) {
				return v, nil
			}
			if n != nil && uint64(v) <= uint64(n.end) {
				continue
			}
		}
		if n := t.next; n != nil {
			t.next = nil
			if t.expired(n) {
				t.dropped.Add(n.end - n.start + 1)
				continue
			}
			t.install(n)
			continue
		}
		if time.Now().After(deadline) {
			return 0, newError("SEGMENT_UNAVAILABLE", "no fresh range of "+
				"tag %q within %v", t.name, t.c.bound())
		}
		t.fetchLocked()
		ch := t.inflight
		installs := t.installs
		t.mu.Unlock()
		// Not much past the deadline: a Transport that ignores the
		// request's context may keep a fetch from ending. The grace lets
		// a fetch whose last attempt timed out at the deadline say so.
		wait := time.NewTimer(time.Until(deadline) + fetchGrace)
		select {
		case <-ch:
		case <-wait.C:
		}
		wait.Stop()
		if t.waited != nil {
			t.waited()
		}
		t.mu.Lock()
		done := false
		select {
		case <-ch:
			done = true
		default:
		}
		if t.installs != installs {
			// Another call installed a range meanwhile (the fetch's, or
			// one after it): look at the current range again. fetchErr
			// may be a later fetch's, a preload's, with IDs still there.
			continue
		}
		if done && t.next == nil && t.fetchErr != nil {
			return 0, t.fetchErr
		}
	}
}

// install makes n the current range, in the order Next relies on (see
// Tag): the cursor first, then the bound: the ID before the preload
// point, or the range's end when the preload point is its first ID (the
// fetch of the next starts now). Needs t.mu, and the current range used
// up or retired.
func (t *Tag) install(n *span) {
	if t.cur != nil && t.cur.timer != nil {
		t.cur.timer.Stop()
	}
	t.installs++
	if n.start < t.hotEnd {
		// Below a range installed before (another server of the store):
		// cursor and bound stay, the cursor past the bound.
		n.locked, n.pos = true, n.start
		t.epoch.Add(1) // the range before is used up: its blocks are dropped
		t.cur = n
		t.armValidity(n)
		return
	}
	t.hotEnd = n.end + 1
	b := n.preloadAt - 1
	if b < n.start {
		b = n.end
	}
	t.cursor.Store(n.start - 1)
	if t.switching != nil {
		t.switching()
	}
	t.bound.Store(b)
	t.epoch.Add(1) // after the cursor store: blocks of the range before are dropped
	t.cur = n
	if b == n.end {
		t.fetchLocked()
	}
	t.armValidity(n)
}

// armValidity starts n's validity timer. Needs t.mu.
func (t *Tag) armValidity(n *span) {
	if t.opts.Validity > 0 {
		age := time.Since(n.leasedAt)
		n.timer = time.AfterFunc(t.opts.Validity-age, func() { t.expire(n) })
	}
}

func (t *Tag) expired(n *span) bool {
	return t.opts.Validity > 0 && time.Since(n.leasedAt) >= t.opts.Validity
}

// expire ends range n at its validity, if it is still the current one.
// No clock is read on the hot path: this timer does it.
func (t *Tag) expire(n *span) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == n {
		t.retire()
	}
}

// retire ends the current range: its cursor moves up to its end, so that
// the next Next takes the slow path; what it had left is skipped and
// counted. The cursor only moves up here, so no ID comes twice. Needs
// t.mu.
func (t *Tag) retire() {
	n := t.cur
	if n == nil {
		return
	}
	// After the cursor moved: a block taken with the epoch loaded after
	// this store was taken past the range's end, and refused.
	defer t.epoch.Add(1)
	if n.locked {
		if n.pos <= n.end {
			t.dropped.Add(n.end - n.pos + 1)
			n.pos = n.end + 1
		}
		return
	}
	for {
		was := t.cursor.Load()
		if was >= n.end {
			return
		}
		if t.cursor.CompareAndSwap(was, n.end) {
			t.dropped.Add(n.end - was)
			return
		}
	}
}

// minU is the lesser of a and b compared unsigned (see Tag).
func minU(a, b int64) int64 {
	if uint64(a) <= uint64(b) {
		return a
	}
	return b
}

func (t *Tag) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if t.cur != nil && t.cur.timer != nil {
		t.cur.timer.Stop()
	}
	t.retire()
	if t.next != nil {
		t.dropped.Add(t.next.end - t.next.start + 1)
		t.next = nil
	}
}

// lease asks a server for count consecutive IDs of tag: [start, end),
// and the server that gave them. A fetch runs in the background, so it
// has no caller's context: the client's timeout and retries bound it. A
// range of a store other than the one pinned is refused with
// STORE_MISMATCH, and the call fails over as for a 503.
func (c *Client) lease(tag string, count int64, calls *atomic.Int64) (int64, int64, string, error) {
	var start, end int64
	var from string
	_, err := c.getChecked(context.Background(), "/v1/segment/"+url.PathEscape(tag)+
		"/range?count="+strconv.FormatInt(count, 10), calls,
		func(body []byte, h http.Header, srv string) *Error {
			var a struct {
				Start json.RawMessage `json:"start"`
				End   json.RawMessage `json:"end"`
				Count int64           `json:"count"`
				Store *string         `json:"store"`
			}
			if err := json.Unmarshal(body, &a); err != nil {
				return &Error{Code: CodeBadResponse, Server: srv,
					Message: "range answer is not a JSON object: " + err.Error()}
			}
			s, e, err := parseRange(jsonString(a.Start), jsonString(a.End), a.Count, count)
			if err != nil {
				err.Server = srv
				return err
			}
			if err := c.checkStore(a.Store, h.Values("Frond-Store"), srv); err != nil {
				return err
			}
			start, end, from = s, e, srv
			return nil
		})
	if err != nil {
		return 0, 0, "", err
	}
	return start, end, from, nil
}

// jsonString is the string a JSON value holds, or "" (refused by
// parseRange) for a number or any other type: a number may have been
// rounded on its way.
func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// decimal reads 1 to 19 decimal digits within int64, nothing else (no
// sign, no "_", no fraction, no exponent).
func decimal(s string) (int64, bool) {
	if len(s) < 1 || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// parseRange checks a range answer: decimal bounds, end - start = count,
// no more than asked for, start at least 1.
func parseRange(s, e string, n, asked int64) (int64, int64, *Error) {
	start, ok1 := decimal(s)
	end, ok2 := decimal(e)
	if !ok1 || !ok2 || start < 1 || end <= start || end-start != n || n > asked {
		return 0, 0, newError(CodeBadResponse, "range answer start=%q end=%q "+
			"count=%d is not a range of at most %d IDs (bounds are strings "+
			"of decimal digits)", s, e, n, asked)
	}
	return start, end, nil
}
