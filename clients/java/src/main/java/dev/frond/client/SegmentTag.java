// SPDX-License-Identifier: Apache-2.0
package dev.frond.client;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * A segment tag's handle: {@link #next()} hands out the tag's IDs from
 * ranges leased from the server ({@code /v1/segment/{tag}/range}). Thread
 * safe; each thread sees its IDs strictly increase.
 *
 * <p>The current range is an immutable object but for its cursor, so that
 * next() is one getAndIncrement and two comparisons. The thread that takes
 * the preload point starts the fetch of the next range in the background; the
 * one that finds the range used up switches to it, or waits for it within
 * the client's timeout and retries.
 */
public final class SegmentTag {
    /**
     * A leased range [start, start + size): its cursor is the AtomicLong it
     * extends (the JVM lays a superclass's fields first). The bounds are
     * read-only, eight longs after the cursor: off its cache line, so that
     * threads on other cores read them from their own caches while the
     * cursor's line moves between them.
     */
    @SuppressWarnings("unused")
    static final class Lease extends AtomicLong {
        private static final long serialVersionUID = 1L;
        private long p0, p1, p2, p3, p4, p5, p6, p7;
        final long start, size, biasedSize, preloadAt, leasedAt;
        transient ScheduledFuture<?> timer; // guarded by the tag's lock

        Lease(long start, long size, long preloadAt) {
            super(start);
            this.start = start;
            this.size = size;
            this.biasedSize = size + Long.MIN_VALUE;
            this.preloadAt = preloadAt;
            this.leasedAt = System.nanoTime();
        }

        long end() { return start + size; }
    }

    private volatile Lease cur = new Lease(0, 0, -1); // empty: slow path first
    private final FrondClient c;
    private final String name;
    private final TagOptions opts;
    private final Object lock = new Object();
    // guarded by lock:
    private Lease nextLease;
    private boolean inflight;
    private FrondException fetchErr;
    private long hiEnd;
    private long size;
    private long lastFetch;
    private boolean fetched; // lastFetch is set
    private boolean closed;
    LongSupplier sizingClock = System::nanoTime; // a test sets its own before use

    final AtomicLong calls = new AtomicLong(), ranges = new AtomicLong(),
        leased = new AtomicLong(), dropped = new AtomicLong();

    SegmentTag(FrondClient c, String name, TagOptions opts) {
        this.c = c;
        this.name = name;
        this.opts = opts;
        this.size = opts.minRange();
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

    /** The tag's next ID. */
    public long next() {
        Lease l = cur;
        long v = l.getAndIncrement();
        if (v - l.start + Long.MIN_VALUE < l.biasedSize && v != l.preloadAt)
            return v;
        return rare(l, v);
    }

    private long rare(Lease l, long v) {
        if (v - l.start + Long.MIN_VALUE < l.biasedSize) {
            synchronized (lock) {
                fetchLocked();
            }
            return v;
        }
        return slow();
    }

    /** The handle's counts (failures and failovers are the client's). */
    public Stats stats() {
        return new Stats(calls.get(), 0, 0, ranges.get(), leased.get(), dropped.get());
    }

    /** Starts a fetch of the next range unless one runs or is there. */
    private void fetchLocked() {
        if (inflight || nextLease != null || closed)
            return;
        long now = sizingClock.getAsLong();
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
        long count = size;
        inflight = true;
        c.runInBackground(() -> fetch(count));
    }

    private void fetch(long count) {
        long start = 0, end = 0;
        FrondException err = null;
        try {
            String body = c.get("/v1/segment/" + FrondClient.pathEscape(name)
                + "/range?count=" + count, calls);
            var m = Json.object(body);
            long[] r = parseRange(m.get("start"), m.get("end"), m.get("count"), count);
            start = r[0];
            end = r[1];
        } catch (FrondException e) {
            err = e;
        } catch (RuntimeException e) {
            err = new FrondException(FrondException.UNAVAILABLE, e.toString(), 0, null, e);
        }
        synchronized (lock) {
            if (err == null) {
                if (closed) {
                    dropped.addAndGet(end - start);
                } else if (start < hiEnd) {
                    dropped.addAndGet(end - start);
                    err = new FrondException(FrondException.BAD_RESPONSE, "range ["
                        + start + ", " + end + ") of tag \"" + name + "\" is not above"
                        + " the IDs already leased (up to " + (hiEnd - 1) + "): dropped");
                } else {
                    long n = end - start;
                    long pre = end - (long) (n * opts.preload());
                    nextLease = new Lease(start, n, pre >= end ? end - 1 : pre);
                    hiEnd = end;
                    ranges.incrementAndGet();
                    leased.addAndGet(n);
                }
            }
            fetchErr = err;
            inflight = false;
            lock.notifyAll();
        }
    }

    /** Checks a range answer: decimal bounds, end - start = count, no more
     *  than asked for, start at least 1. Returns {start, end}. */
    static long[] parseRange(Object s, Object e, Object n, long asked) {
        try {
            long start = Long.parseLong((String) s), end = Long.parseLong((String) e);
            long count = (Long) n;
            if (start >= 1 && end > start && end - start == count && count <= asked)
                return new long[] {start, end};
        } catch (RuntimeException ignored) {
            // a wrong type or not a number: refused below
        }
        throw new FrondException(FrondException.BAD_RESPONSE, "range answer start="
            + s + " end=" + e + " count=" + n + " is not a range of at most "
            + asked + " IDs");
    }

    private long slow() {
        long deadline = System.nanoTime() + c.boundMillis() * 1_000_000L;
        synchronized (lock) {
            for (;;) {
                if (closed)
                    throw new FrondException(FrondException.CLOSED, "the client is closed");
                Lease l = cur;
                long v = l.getAndIncrement();
                if (v - l.start + Long.MIN_VALUE < l.biasedSize) {
                    if (v == l.preloadAt)
                        fetchLocked();
                    return v;
                }
                Lease n = nextLease;
                if (n != null) {
                    nextLease = null;
                    if (expired(n)) {
                        dropped.addAndGet(n.size);
                        continue;
                    }
                    if (l.timer != null)
                        l.timer.cancel(false);
                    long valid = opts.validity().toNanos();
                    if (valid > 0) {
                        long left = valid - (System.nanoTime() - n.leasedAt);
                        try {
                            n.timer = c.timers.schedule(() -> expire(n), Math.max(0, left),
                                TimeUnit.NANOSECONDS);
                        } catch (RuntimeException closedMeanwhile) {
                            // the client is closing: close() drops the range
                        }
                    }
                    cur = n;
                    continue;
                }
                if (System.nanoTime() - deadline > 0)
                    throw new FrondException("SEGMENT_UNAVAILABLE", "no fresh range of tag \""
                        + name + "\" within " + c.boundMillis() + " ms");
                fetchLocked();
                try { // fetch() notifies when it ends
                    lock.wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000L));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new FrondException(FrondException.TIMEOUT,
                        "interrupted while waiting for a range", 0, null, e);
                }
                if (!inflight && nextLease == null && fetchErr != null)
                    throw fetchErr;
            }
        }
    }

    private boolean expired(Lease l) {
        long valid = opts.validity().toNanos();
        return valid > 0 && System.nanoTime() - l.leasedAt >= valid;
    }

    /** Ends a range at its validity: its cursor jumps to its end, so that
     *  the next next() takes the slow path; what it had left is skipped. */
    private void expire(Lease l) {
        long was = l.getAndSet(l.end());
        if (was < l.end())
            dropped.addAndGet(l.end() - was);
    }

    void close() {
        synchronized (lock) {
            closed = true;
            Lease l = cur;
            if (l.timer != null)
                l.timer.cancel(false);
            expire(l);
            if (nextLease != null) {
                dropped.addAndGet(nextLease.size);
                nextLease = null;
            }
            lock.notifyAll();
        }
    }
}
