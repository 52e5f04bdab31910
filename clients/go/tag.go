// SPDX-License-Identifier: Apache-2.0

package frond

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"
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

// lease is one leased range [start, start+size): immutable but for its
// cursor, so that Next is one atomic add and a comparison. The cursor has
// a cache line of its own: goroutines on other cores read the bounds from
// their own caches while the cursor's line moves between them.
type lease struct {
	start     int64
	size      uint64
	preloadAt int64 // the ID whose taker starts the next fetch
	leasedAt  time.Time
	timer     *time.Timer
	_         [64]byte
	cursor    atomic.Int64
	_         [56]byte
}

func (l *lease) end() int64 { return l.start + int64(l.size) }

// Tag is a segment tag's handle: Next hands out the tag's IDs from
// ranges leased from the server. Safe for use by any number of
// goroutines; each goroutine sees its IDs strictly increase.
type Tag struct {
	_    [64]byte       // cur on a line that only range switches write
	cur  unsafe.Pointer // *lease: load() and store()
	_    [56]byte
	c    *Client
	name string
	opts TagOptions

	mu        sync.Mutex    // guards what follows
	next      *lease        // the prefetched range, if any
	inflight  chan struct{} // closed when the running fetch ends
	fetchErr  error         // how the last fetch ended
	hiEnd     int64         // the end of the highest range accepted
	size      int64         // the size of the next range asked for
	lastFetch time.Time
	closed    bool
	now       func() time.Time // the clock of the sizing: time.Now, or a test's

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
	t := &Tag{c: c, name: name, opts: o, size: o.MinRange, now: time.Now}
	t.store(&lease{}) // empty: the first Next takes the slow path
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

// load and store the current range (Go 1.19 does not inline
// atomic.Pointer[lease].Load: a call more on every Next).
func (t *Tag) load() *lease   { return (*lease)(atomic.LoadPointer(&t.cur)) }
func (t *Tag) store(l *lease) { atomic.StorePointer(&t.cur, unsafe.Pointer(l)) }

// Name returns the tag's name.
func (t *Tag) Name() string { return t.name }

// Next returns the tag's next ID. While the current range lasts this is
// one atomic add and two comparisons; the goroutine that takes the
// preload point starts the fetch of the next range in the background,
// and the one that finds the range used up switches to the next (or
// waits for it, within the client's timeout and retries).
func (t *Tag) Next() (int64, error) {
	l := t.load()
	v := l.cursor.Add(1) - 1
	if uint64(v-l.start) < l.size && v != l.preloadAt {
		return v, nil
	}
	return t.rare(l, v)
}

// rare is Next's way out of the hot path, kept out of line so that Next
// stays a few instructions: the preload point, or a range used up.
func (t *Tag) rare(l *lease, v int64) (int64, error) {
	if uint64(v-l.start) < l.size {
		t.preload()
		return v, nil
	}
	return t.slow()
}

// TagStats counts one handle's calls and ranges.
type TagStats struct {
	Calls   int64 // range requests sent, every attempt
	Ranges  int64 // ranges leased
	Leased  int64 // IDs in them
	Dropped int64 // leased IDs skipped: expired, closed, refused
}

// Stats returns the handle's counts.
func (t *Tag) Stats() TagStats {
	return TagStats{Calls: t.calls.Load(), Ranges: t.ranges.Load(),
		Leased: t.leased.Load(), Dropped: t.dropped.Load()}
}

func (t *Tag) preload() {
	t.mu.Lock()
	t.fetchLocked()
	t.mu.Unlock()
}

// fetchLocked starts a fetch of the next range unless one runs or is
// there. Needs t.mu.
func (t *Tag) fetchLocked() {
	if t.inflight != nil || t.next != nil || t.closed {
		return
	}
	now := t.now()
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
	ch := make(chan struct{})
	t.inflight = ch
	go t.fetch(t.size, ch)
}

// fetch leases count IDs and offers them as the next range.
func (t *Tag) fetch(count int64, ch chan struct{}) {
	start, end, err := t.c.lease(t.name, count, &t.calls)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil {
		switch {
		case t.closed:
			t.dropped.Add(end - start)
		case start < t.hiEnd:
			t.dropped.Add(end - start)
			err = newError(CodeBadResponse, "range [%d, %d) of tag %q is not "+
				"above the IDs already leased (up to %d): dropped",
				start, end, t.name, t.hiEnd-1)
		default:
			l := &lease{start: start, size: uint64(end - start),
				leasedAt: time.Now()}
			l.cursor.Store(start)
			l.preloadAt = end - int64(float64(end-start)*t.opts.Preload)
			if l.preloadAt >= end {
				l.preloadAt = end - 1
			}
			t.next = l
			t.hiEnd = end
			t.ranges.Add(1)
			t.leased.Add(end - start)
		}
	}
	t.fetchErr = err
	t.inflight = nil
	close(ch)
}

// slow serves an ID once the current range is used up or expired:
// switch to the prefetched range, or fetch one and wait for it.
func (t *Tag) slow() (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	deadline := time.Now().Add(t.c.bound())
	for {
		if t.closed {
			return 0, newError(CodeClosed, "the client is closed")
		}
		l := t.load()
		v := l.cursor.Add(1) - 1
		if uint64(v-l.start) < l.size {
			if v == l.preloadAt {
				t.fetchLocked()
			}
			return v, nil
		}
		if n := t.next; n != nil {
			t.next = nil
			if t.expired(n) {
				t.dropped.Add(int64(n.size))
				continue
			}
			if l.timer != nil {
				l.timer.Stop()
			}
			if t.opts.Validity > 0 {
				age := time.Since(n.leasedAt)
				n.timer = time.AfterFunc(t.opts.Validity-age, func() { t.expire(n) })
			}
			t.store(n)
			continue
		}
		if time.Now().After(deadline) {
			return 0, newError("SEGMENT_UNAVAILABLE", "no fresh range of "+
				"tag %q within %v", t.name, t.c.bound())
		}
		t.fetchLocked()
		ch := t.inflight
		t.mu.Unlock()
		<-ch
		t.mu.Lock()
		if t.next == nil && t.fetchErr != nil {
			return 0, t.fetchErr
		}
	}
}

func (t *Tag) expired(l *lease) bool {
	return t.opts.Validity > 0 && time.Since(l.leasedAt) >= t.opts.Validity
}

// expire ends a range at its validity: its cursor jumps to its end, so
// that the next Next takes the slow path; what it had left is skipped.
func (t *Tag) expire(l *lease) {
	if was := l.cursor.Swap(l.end()); was < l.end() {
		t.dropped.Add(l.end() - was)
	}
}

func (t *Tag) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	l := t.load()
	if l.timer != nil {
		l.timer.Stop()
	}
	t.expire(l)
	if t.next != nil {
		t.dropped.Add(int64(t.next.size))
		t.next = nil
	}
}

// lease asks a server for count consecutive IDs of tag: [start, end).
// A fetch runs in the background, so it has no caller's context: the
// client's timeout and retries bound it.
func (c *Client) lease(tag string, count int64, calls *atomic.Int64) (int64, int64, error) {
	body, err := c.get(context.Background(), "/v1/segment/"+url.PathEscape(tag)+
		"/range?count="+strconv.FormatInt(count, 10), calls)
	if err != nil {
		return 0, 0, err
	}
	var a struct {
		Start string `json:"start"`
		End   string `json:"end"`
		Count int64  `json:"count"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return 0, 0, newError(CodeBadResponse, "range answer is not JSON: %v", err)
	}
	return parseRange(a.Start, a.End, a.Count, count)
}

// parseRange checks a range answer: decimal bounds, end - start = count,
// no more than asked for, start at least 1.
func parseRange(s, e string, n, asked int64) (int64, int64, error) {
	start, err1 := strconv.ParseInt(s, 10, 64)
	end, err2 := strconv.ParseInt(e, 10, 64)
	if err1 != nil || err2 != nil || start < 1 || end <= start ||
		end-start != n || n > asked {
		return 0, 0, newError(CodeBadResponse, "range answer start=%q end=%q "+
			"count=%d is not a range of at most %d IDs", s, e, n, asked)
	}
	return start, end, nil
}
