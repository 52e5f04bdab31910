// SPDX-License-Identifier: Apache-2.0
package dev.frond.client;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;
import java.util.function.LongSupplier;

/*
 * The current range lives in the handle's own fields, so that a block's
 * refill is one acquire load, one getAndAdd and one comparison on fields
 * it reaches without a pointer. The classes below only lay those fields out: a
 * superclass's fields come before a subclass's, so eight longs of padding
 * on each side keep the bound on a line that only range switches write,
 * and the cursor on a line of its own.
 */
@SuppressWarnings("unused")
abstract class TagPad0 {
    long p00, p01, p02, p03, p04, p05, p06, p07;
}

abstract class TagBound extends TagPad0 {
    long bound; // next() accepts up to this ID, + Long.MIN_VALUE (BOUND)
    // moves on each switch, expiry and close: a thread's block taken
    // under an older one is dropped (see SegmentTag.next)
    volatile long epoch;
}

@SuppressWarnings("unused")
abstract class TagPad1 extends TagBound {
    long p10, p11, p12, p13, p14, p15, p16, p17;
}

abstract class TagCursor extends TagPad1 {
    long cursor; // the last ID taken: next()'s add returns the next (CURSOR)
}

@SuppressWarnings("unused")
abstract class TagPad2 extends TagCursor {
    long p20, p21, p22, p23, p24, p25, p26, p27;
}

/**
 * A segment tag's handle: {@link #next()} hands out the tag's IDs from
 * ranges leased from the server ({@code /v1/segment/{tag}/range}). Thread
 * safe; each thread sees its IDs strictly increase.
 *
 * <p>The thread that takes the preload point starts the fetch of the next
 * range in the background; the one that finds the range used up switches to
 * it, or waits for it within the client's timeout and retries. The bound
 * next() compares with is the current range's last ID or, until the preload
 * point is taken, the ID before it: the first caller past it takes the slow
 * path, starts the fetch and raises the bound to the range's end.
 *
 * <p>Why a switch needs no lock on next()'s side: a switch, under the lock,
 * stores first cursor = S2-1, then (release) the bound B2 (in [S2, E2]),
 * and the ranges so installed strictly increase (S2 > E1). Servers of one
 * store answer from their own buffers, so after a failover a range may lie
 * below those taken before; such a range is not installed in cursor and
 * bound (a caller holding an old bound could take an ID above its end): it
 * is served by the slow path under the lock, while cursor and bound stay
 * where they are, the cursor past every bound, so next() refuses all.
 * Below, "a next()" is one add of a thread's block (see next()): one add
 * takes its k IDs at once, so what holds for its first holds for all of
 * them. next() loads the bound (acquire) before its add. One that loaded
 * the old bound B1 <= E1 and adds on the new cursor gets v >= S2 > E1 and
 * takes the slow path. One that loaded B2 saw the cursor store before it,
 * so its add returns at least S2. Adds before the cursor store return
 * old-range values, accepted only when at most B1. The slow path accepts a
 * refused v only when the bound it loaded is the current range's (bounds
 * lie in their range, and ranges do not overlap) and v is at most that
 * range's end: then v was taken after the range's cursor store and before
 * the next's. An ID is handed out at most once and only from a range the
 * server leased; IDs may be skipped. The comparison is unsigned (the bound
 * is kept biased by Long.MIN_VALUE), so that a cursor run past
 * Long.MAX_VALUE by callers refused over and over is refused too.
 */
public final class SegmentTag extends TagPad2 {
    private static final VarHandle BOUND, CURSOR;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            BOUND = l.findVarHandle(TagBound.class, "bound", long.class);
            CURSOR = l.findVarHandle(TagCursor.class, "cursor", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** A leased range [start, end], both inclusive, as the lock keeps it;
     *  next() never reads it. */
    static final class Lease {
        final long start, end, preloadAt, leasedAt;
        ScheduledFuture<?> timer; // guarded by the tag's lock
        // locked: served by the slow path under the lock from pos, its IDs
        // never reached through cursor and bound (see the class)
        boolean locked;
        long pos;

        Lease(long start, long end, long preloadAt) {
            this.start = start;
            this.end = end;
            this.preloadAt = preloadAt;
            this.leasedAt = System.nanoTime();
        }

        long size() { return end - start + 1; }
    }

    private final FrondClient c;
    private final String name;
    private final TagOptions opts;
    private final Object lock = new Object();
    // guarded by lock, as is every store to bound and cursor but next()'s add:
    private Lease cur; // the current range, null before the first
    private Lease nextLease;
    private boolean inflight;
    private FrondException fetchErr;
    private final Map<String, Long> hiEnd = new HashMap<>(); // per server: its last range's end
    private long hotEnd; // the end of the highest range in cursor and bound, exclusive
    private long size;
    private long maxSize; // the server's max_range, once it refused a size (0: unknown)
    private long installs, sizedAt; // ranges made current; installs at the last sizing
    private long lastFetch;
    private boolean fetched; // lastFetch is set
    private boolean closed;
    LongSupplier sizingClock = System::nanoTime; // a test sets its own before use
    /** A leased range [start, end) and the server that gave it. */
    record Leased(long start, long end, String server) {}

    /** Leases count IDs, or throws; a test sets its own before use. */
    LongFunction<Leased> leaser = this::lease;
    Runnable switching; // if a test sets it, runs between a switch's stores
    Runnable waited; // if a test sets it, runs when a call stops waiting for a fetch

    final AtomicLong calls = new AtomicLong(), ranges = new AtomicLong(),
        leased = new AtomicLong(), dropped = new AtomicLong();

    SegmentTag(FrondClient c, String name, TagOptions opts) {
        this.c = c;
        this.name = name;
        this.opts = opts;
        this.size = opts.minRange();
        BOUND.setRelease(this, Long.MIN_VALUE); // bound = cursor = 0: the first next() is slow
    }

    /** Refuses what the server would: 1 to 128 bytes of UTF-8 without
     *  control characters. */
    static void checkName(String name) {
        if (name == null || name.isEmpty()
            || name.getBytes(StandardCharsets.UTF_8).length > 128)
            throw new FrondException("TAG_INVALID", "tag \"" + name
                + "\" is not 1 to 128 bytes of UTF-8");
        for (int i = 0; i < name.length(); i++) {
            char ch = name.charAt(i);
            if (Character.isISOControl(ch)
                || (Character.isSurrogate(ch) && !(Character.isHighSurrogate(ch)
                    && i + 1 < name.length() && Character.isLowSurrogate(name.charAt(++i)))))
                throw new FrondException("TAG_INVALID", "tag \"" + name
                    + "\" holds a control character or a lone surrogate");
        }
    }

    public String name() { return name; }

    public TagOptions options() { return opts; }

    /*
     * Each thread takes IDs from the cursor in blocks: one add for 1, 2, 4
     * ... up to BLOCK_MAX IDs, then hands them out with no atomic
     * operation at all. A locked add is the one costly step of the path
     * (about 6 ns on today's x86 CPUs, more when threads share the cursor's
     * cache line); a block pays it once. A block is taken exactly as one ID
     * was (the bound loaded before the add; see the class): every ID of
     * [v, v + k - 1] up to the bound belongs to the range the bound is in,
     * and to this thread alone; IDs of the block above the bound are
     * skipped. The block carries the epoch read before its add; a switch,
     * an expiry or a close moves the epoch, and the next call drops what
     * is left (counted in dropped()), so no ID of a range is handed out
     * after its expiry or the close, and a thread's IDs still strictly
     * increase. A thread's block is {next, last, epoch, size of the next
     * block}.
     */
    static final int BLOCK_MAX = 16;
    private final ThreadLocal<long[]> blocks = ThreadLocal.withInitial(() -> new long[] {1, 0, 0, 1});

    /** The tag's next ID. */
    public long next() {
        long[] t = blocks.get();
        long v = t[0];
        if (v <= t[1] && t[2] == epoch) {
            t[0] = v + 1;
            return v;
        }
        return refill(t);
    }

    /** Takes the thread's next block and returns its first ID. */
    private long refill(long[] t) {
        if (t[0] <= t[1]) { // left from an older epoch
            dropped.addAndGet(t[1] - t[0] + 1);
            t[1] = t[0] - 1;
            t[3] = 1;
        }
        long e = epoch; // before the add: a later switch moves it
        long k = t[3];
        long b = (long) BOUND.getAcquire(this); // before the add: see the class
        long v = (long) CURSOR.getAndAdd(this, k) + 1, last = v + k - 1;
        // unsigned (the bound is kept biased): the cursor may have run past
        // Long.MAX_VALUE (see the class), and last with it
        if (last + Long.MIN_VALUE <= b && v + Long.MIN_VALUE <= b)
            return keep(t, v, last, e);
        return slow(v, last, b - Long.MIN_VALUE, t, e);
    }

    /** Makes [v + 1, last] the thread's block under epoch e; returns v. */
    private static long keep(long[] t, long v, long last, long e) {
        t[0] = v + 1;
        t[1] = last;
        t[2] = e;
        t[3] = Math.min(BLOCK_MAX, 2 * t[3]);
        return v;
    }

    /**
     * The handle's counts (failures and failovers are the client's). Ranges
     * are read before leased IDs, which a fetch adds first: a range counted
     * here has its IDs counted too.
     */
    public Stats stats() {
        return new Stats(calls.get(), 0, 0, ranges.get(), leased.get(), dropped.get());
    }

    /**
     * Waits at most millis for the range fetch in flight, if any, to end;
     * whether none is in flight. A fetch counts its call when it is sent
     * and its range when the answer comes: for tests that compare the two
     * once the draws have stopped (no fetch starts after it then).
     */
    boolean awaitFetch(long millis) throws InterruptedException {
        long end = System.nanoTime() + millis * 1_000_000L;
        synchronized (lock) {
            while (inflight) {
                long left = end - System.nanoTime();
                if (left <= 0)
                    return false;
                lock.wait(Math.max(1, left / 1_000_000L));
            }
            return true;
        }
    }

    /** Starts a fetch of the next range unless one runs or is there. */
    private void fetchLocked() {
        if (inflight || nextLease != null || closed)
            return;
        long now = sizingClock.getAsLong();
        // The size adapts once per range used: a fetch tried again after a
        // failure asks for the same size.
        if (!fetched || sizedAt != installs)
            adapt(now);
        if (maxSize > 0 && size > maxSize)
            size = maxSize;
        long count = size;
        inflight = true;
        try {
            c.runInBackground(() -> fetch(count));
        } catch (Throwable t) {
            // No fetch runs (no thread could be made: an OutOfMemoryError),
            // or one run here has ended itself: the next call tries again.
            inflight = false;
            lock.notifyAll();
            throw t;
        }
    }

    /** Sizes the next range by the time since the last sizing. */
    private void adapt(long now) {
        if (fetched) {
            long since = now - lastFetch, target = opts.target().toNanos();
            if (since < target && size < opts.maxRange())
                size *= 2;
            else if (since > 2 * target && size > opts.minRange())
                size /= 2;
            size = Math.max(opts.minRange(), Math.min(opts.maxRange(), size));
        }
        lastFetch = now;
        fetched = true;
        sizedAt = installs;
    }

    /** Leases count IDs; a range of a store other than the one pinned is
     *  refused with STORE_MISMATCH, and the call fails over. */
    private Leased lease(long count) {
        return c.get("/v1/segment/" + FrondClient.pathEscape(name) + "/range?count=" + count,
            calls, (body, h, srv) -> {
                var m = Json.object(body);
                long[] r;
                try {
                    r = parseRange(m.get("start"), m.get("end"), m.get("count"), count);
                } catch (FrondException e) {
                    throw new FrondException(e.code(), e.getMessage(), 0, srv, null);
                }
                c.checkStore(m.get("store"), h.allValues("Frond-Store"), srv);
                return new Leased(r[0], r[1], srv);
            });
    }

    private static final java.util.regex.Pattern COUNT_BOUND =
        java.util.regex.Pattern.compile("\\[1, ?([0-9]{1,18})\\]");

    /** Leases at most count IDs. A server that refuses the size as above its
     *  max_range (COUNT_INVALID) teaches the handle its bound: the one its
     *  message names, else half the size; the lease is tried again within it
     *  at once. */
    private Leased leaseWithin(long count) {
        for (int i = 0; i < 64; i++) {
            try {
                return leaser.apply(count);
            } catch (FrondException e) {
                if (!e.code().equals("COUNT_INVALID") || e.status() != 400 || count <= 1)
                    throw e;
                var m = COUNT_BOUND.matcher(String.valueOf(e.getMessage()));
                long bound = m.find() ? Long.parseLong(m.group(1)) : 0;
                count = bound >= 1 && bound < count ? bound : count / 2;
                synchronized (lock) {
                    maxSize = count;
                    size = Math.min(size, count);
                }
            }
        }
        throw new FrondException("COUNT_INVALID", "no range size of tag \"" + name
            + "\" the server takes");
    }

    /** What a fetch's callers are told when the fetch ended in an Error and
     *  not even its own message could be made. */
    private static final FrondException FETCH_FAILED = FrondException.shared(
        FrondException.UNAVAILABLE, "a range fetch ended in an Error");

    private void fetch(long count) {
        long start = 0, end = 0;
        String srv = null;
        FrondException err = FETCH_FAILED;
        try {
            Leased r = leaseWithin(count);
            start = r.start();
            end = r.end();
            srv = r.server();
            err = null;
        } catch (FrondException e) {
            err = e;
        } catch (RuntimeException e) {
            err = new FrondException(FrondException.UNAVAILABLE, e.toString(), 0, null, e);
        } catch (Error e) {
            err = new FrondException(FrondException.UNAVAILABLE, e.toString(), 0, null, e);
            throw e;
        } finally {
            // However the lease ended, an Error included (it goes on to the
            // thread), the fetch ends: its callers are told, and the next
            // call fetches again.
            synchronized (lock) {
                FrondException told = FETCH_FAILED;
                try {
                    told = offer(err, start, end, srv);
                } finally {
                    fetchErr = told;
                    inflight = false;
                    lock.notifyAll();
                }
            }
        }
    }

    /** Offers the range [start, end) that srv leased as the next, unless
     *  err, the lease's failure. Returns the fetch's error, or null. Needs
     *  the lock. */
    private FrondException offer(FrondException err, long start, long end, String srv) {
        if (err != null)
            return err;
        Long hi = hiEnd.get(srv);
        if (closed) {
            dropped.addAndGet(end - start);
            return null;
        }
        if (hi != null && start < hi) {
            // a server's ranges increase; ranges of two servers of one
            // store are unique but not compared (see the class)
            dropped.addAndGet(end - start);
            return new FrondException(FrondException.BAD_RESPONSE, "range [" + start + ", "
                + end + ") of tag \"" + name + "\" is below " + hi
                + ", the end of a range the same server leased before: dropped", 0, srv, null);
        }
        long n = end - start;
        long pre = end - (long) (n * opts.preload());
        nextLease = new Lease(start, end - 1, pre >= end ? end - 1 : pre);
        hiEnd.put(srv, end);
        // The IDs first: stats() reads ranges before leased, so a reader
        // that sees the range sees its IDs too.
        leased.addAndGet(n);
        ranges.incrementAndGet();
        return null;
    }

    /** Checks a range answer: decimal bounds, end - start = count, no more
     *  than asked for, start at least 1. Returns {start, end}. */
    static long[] parseRange(Object s, Object e, Object n, long asked) {
        long start = decimal(s), end = decimal(e);
        if (start >= 1 && end > start && n instanceof Long count && end - start == count
            && count <= asked)
            return new long[] {start, end};
        throw new FrondException(FrondException.BAD_RESPONSE, "range answer start="
            + s + " end=" + e + " count=" + n + " is not a range of at most "
            + asked + " IDs (bounds are strings of decimal digits)");
    }

    /** A JSON string of 1 to 19 decimal digits within a long (no sign, no
     *  "_", no fraction: a number may have been rounded on its way), else -1. */
    private static long decimal(Object o) {
        if (!(o instanceof String s) || s.isEmpty() || s.length() > 19)
            return -1;
        for (int i = 0; i < s.length(); i++)
            if (s.charAt(i) < '0' || s.charAt(i) > '9')
                return -1;
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException tooLarge) {
            return -1;
        }
    }

    /**
     * Serves a block the fast path refused: [v, last], taken from the cursor
     * in one add after loading bound b, epoch e, for the thread's block t
     * (null: v alone). It crosses the preload point, or the range is used
     * up, expired or closed: start the next fetch, switch to the prefetched
     * range, or fetch one and wait for it. Returns the first ID served; t
     * keeps the rest of the block that is good (every ID of the block up to
     * the bound, or up to the range's end when b is the current range's:
     * the add then ran on that range's cursor, see the class).
     */
    private long slow(long v, long last, long b, long[] t, long e) {
        long deadline = System.nanoTime() + c.boundMillis() * 1_000_000L;
        synchronized (lock) {
            for (;;) {
                if (closed)
                    throw new FrondException(FrondException.CLOSED, "the client is closed");
                Lease c0 = cur;
                if (t != null && Long.compareUnsigned(v, b) <= 0
                    && (c0 == null || c0.locked || b < c0.start || b > c0.end)) {
                    // a block at or below a bound no longer the current
                    // range's: good up to that bound (see the class); under
                    // the current range's bound, the case below takes it
                    return keep(t, v, b, e);
                }
                // v is good if b is the current range's bound and v is not
                // past the range's end (see the class): then v is at or
                // past the preload point.
                Lease n = cur;
                if (n != null && n.locked) {
                    // a range below one installed before: served here
                    if (n.pos <= n.end) {
                        long id = n.pos++;
                        if (id >= n.preloadAt)
                            fetchLocked();
                        return id;
                    }
                } else {
                    if (n != null && b >= n.start && b <= n.end
                        && Long.compareUnsigned(v, n.end) <= 0) {
                        if (b < n.end) {
                            fetchLocked();
                            BOUND.setRelease(this, n.end + Long.MIN_VALUE);
                        }
                        if (t == null)
                            return v;
                        return keep(t, v, Long.compareUnsigned(last, n.end) <= 0 ? last : n.end, e);
                    }
                    // Under the lock, the bound is the current range's: the
                    // cursor is past its end, or the first case takes v.
                    b = (long) BOUND.getAcquire(this) - Long.MIN_VALUE;
                    v = (long) CURSOR.getAndAdd(this, 1L) + 1;
                    last = v; // one ID taken now: the block's others are skipped
                    if (Long.compareUnsigned(v, b) <= 0)
                        return v;
                    if (n != null && Long.compareUnsigned(v, n.end) <= 0)
                        continue;
                }
                Lease next = nextLease;
                if (next != null) {
                    nextLease = null;
                    if (expired(next)) {
                        dropped.addAndGet(next.size());
                        continue;
                    }
                    install(next);
                    continue;
                }
                if (System.nanoTime() - deadline > 0)
                    throw new FrondException("SEGMENT_UNAVAILABLE", "no fresh range of tag \""
                        + name + "\" within " + c.boundMillis() + " ms");
                fetchLocked();
                long seen = installs;
                try { // fetch() notifies when it ends
                    lock.wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000L));
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new FrondException(FrondException.TIMEOUT,
                        "interrupted while waiting for a range", 0, null, ie);
                }
                if (waited != null)
                    waited.run();
                // Another call installed a range meanwhile (the fetch's, or
                // one after it): look at the current range again. fetchErr
                // may be a later fetch's (a preload's), with IDs still there.
                if (installs != seen)
                    continue;
                if (!inflight && nextLease == null && fetchErr != null)
                    throw fetchErr;
            }
        }
    }

    /** The lock of the tag's state; for FakeTest. */
    Object lockForTest() { return lock; }

    /** The bound as next() loads it; for SwitchTest. */
    long boundForTest() { return (long) BOUND.getAcquire(this) - Long.MIN_VALUE; }

    /** next()'s add; for SwitchTest. */
    long addForTest() { return (long) CURSOR.getAndAdd(this, 1L) + 1; }

    /** The slow path of a next() refused (v, after loading bound b); for
     *  SwitchTest. */
    long slowForTest(long v, long b) { return slow(v, v, b, null, 0); }

    /** Makes n the current range, in the order next() relies on (see the
     *  class): the cursor first, then the bound with release: the ID before
     *  the preload point, or the range's end when the preload point is its
     *  first ID (the fetch of the next starts now). Needs the lock, and the
     *  current range used up or retired. */
    private void install(Lease n) {
        if (cur != null && cur.timer != null)
            cur.timer.cancel(false);
        installs++;
        if (n.start < hotEnd) {
            // below a range installed before (another server of the store):
            // cursor and bound stay, the cursor past the bound
            n.locked = true;
            n.pos = n.start;
            epoch++; // the range before is used up: its blocks are dropped
            cur = n;
            armValidity(n);
            return;
        }
        hotEnd = n.end + 1;
        long b = n.preloadAt - 1 < n.start ? n.end : n.preloadAt - 1;
        CURSOR.setVolatile(this, n.start - 1);
        if (switching != null)
            switching.run();
        BOUND.setRelease(this, b + Long.MIN_VALUE);
        epoch++; // blocks of the range before are dropped (under the lock)
        cur = n;
        armValidity(n); // first: a fetch that fails leaves the range timed
        if (b == n.end)
            fetchLocked();
    }

    /** Starts n's validity timer. Needs the lock. */
    private void armValidity(Lease n) {
        long valid = opts.validity().toNanos();
        if (valid > 0) {
            long left = valid - (System.nanoTime() - n.leasedAt);
            try {
                n.timer = c.timers.schedule(() -> expire(n), Math.max(0, left),
                    TimeUnit.NANOSECONDS);
            } catch (RuntimeException closedMeanwhile) {
                // the client is closing: close() retires the range
            }
        }
    }

    private boolean expired(Lease l) {
        long valid = opts.validity().toNanos();
        return valid > 0 && System.nanoTime() - l.leasedAt >= valid;
    }

    /** Ends range n at its validity, if it is still the current one. No
     *  clock is read on the hot path: this timer does it. */
    private void expire(Lease n) {
        synchronized (lock) {
            if (cur == n)
                retire();
        }
    }

    /** Ends the current range: its cursor moves up to its end, so that the
     *  next next() takes the slow path; what it had left is skipped and
     *  counted. The cursor only moves up here, so no ID comes twice. Needs
     *  the lock. */
    private void retire() {
        Lease n = cur;
        if (n == null)
            return;
        if (n.locked) {
            if (n.pos <= n.end) {
                dropped.addAndGet(n.end - n.pos + 1);
                n.pos = n.end + 1;
            }
        } else {
            for (;;) {
                long was = (long) CURSOR.getVolatile(this);
                if (was >= n.end)
                    break;
                if (CURSOR.compareAndSet(this, was, n.end)) {
                    dropped.addAndGet(n.end - was);
                    break;
                }
            }
        }
        // After the cursor moved: a block taken with the epoch read after
        // this store was taken past the range's end, and refused.
        epoch++;
    }

    void close() {
        synchronized (lock) {
            closed = true;
            if (cur != null && cur.timer != null)
                cur.timer.cancel(false);
            retire();
            if (nextLease != null) {
                dropped.addAndGet(nextLease.size());
                nextLease = null;
            }
            lock.notifyAll();
        }
    }
}
