// SPDX-License-Identifier: Apache-2.0
package dev.frond.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The range switch under load: many threads on one tag while ranges of one
 * to three IDs are swapped under them, leased from a fake leaser (as fast
 * as the switch itself) and from a real server; and a next() run between a
 * switch's two stores. Run by ClientTest.
 */
final class SwitchTest {
    private SwitchTest() {}

    /** The ranges a tag was leased, [start, end) in order. */
    static final class Leases {
        private final List<long[]> ranges = new ArrayList<>();

        synchronized void add(long start, long end) { ranges.add(new long[] {start, end}); }

        synchronized long lastEnd() {
            return ranges.isEmpty() ? 1 : ranges.get(ranges.size() - 1)[1];
        }

        /** Whether v lies in a leased range. */
        synchronized boolean has(long v) {
            int lo = 0, hi = ranges.size() - 1;
            while (lo <= hi) {
                int mid = (lo + hi) >>> 1;
                long[] r = ranges.get(mid);
                if (v < r[0])
                    hi = mid - 1;
                else if (v >= r[1])
                    lo = mid + 1;
                else
                    return true;
            }
            return false;
        }
    }

    /**
     * Runs threads threads of up to n next() calls each on tag (they stop
     * early at a deadline, so the load is bounded in time too), then checks
     * what a user relies on: no ID twice, every ID inside a range the tag
     * was leased, each thread's IDs strictly increasing. Returns the number
     * of IDs taken.
     */
    static long hammer(SegmentTag tag, Leases leases, int threads, int n) throws Exception {
        long[][] got = new long[threads][];
        int[] taken = new int[threads];
        ConcurrentLinkedQueue<Throwable> errs = new ConcurrentLinkedQueue<>();
        long stop = System.nanoTime() + 30_000_000_000L;
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            int k = i;
            ts[i] = new Thread(() -> {
                long[] ids = new long[n];
                int j = 0;
                try {
                    for (; j < n && (j % 256 != 0 || System.nanoTime() - stop < 0); j++)
                        ids[j] = tag.next();
                } catch (Throwable e) {
                    errs.add(e);
                }
                got[k] = ids;
                taken[k] = j;
            });
            ts[i].start();
        }
        for (Thread t : ts)
            t.join();
        ClientTest.check(errs.isEmpty(), "errors: " + errs);
        Map<Long, Integer> seen = new HashMap<>();
        long total = 0;
        for (int i = 0; i < threads; i++) {
            long[] ids = Arrays.copyOf(got[i], taken[i]);
            ClientTest.increasing("thread " + i, ids);
            for (long v : ids) {
                Integer was = seen.put(v, i);
                ClientTest.check(was == null, "ID " + v + " handed out twice: threads "
                    + was + " and " + i);
                ClientTest.check(leases.has(v), "ID " + v + " (thread " + i
                    + ") is outside every leased range");
            }
            total += ids.length;
        }
        ClientTest.check(total > 0, "no ID taken");
        return total;
    }

    /** Ranges of 1 to 3 IDs (no more than asked for), strictly increasing
     *  with gaps of 0 to 2 between them, at once. */
    static void fakeLeases(SegmentTag tag, Leases leases, long seed) {
        Random rnd = new Random(seed);
        tag.leaser = count -> {
            synchronized (leases) {
                long size = Math.min(count, 1 + rnd.nextInt(3));
                long start = leases.lastEnd() + rnd.nextInt(3);
                leases.add(start, start + size);
                return new SegmentTag.Leased(start, start + size, "a");
            }
        };
    }

    static void hammerFake() throws Exception {
        for (Duration validity : new Duration[] {Duration.ZERO, Duration.ofMillis(5)}) {
            try (FrondClient c = FrondClient.builder().servers("http://127.0.0.1:9").build()) {
                // Duration.ZERO: no expiry; 5 ms: ranges retired by their
                // timer while threads take from them.
                SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(1, 3)
                    .withValidity(validity));
                Leases leases = new Leases();
                fakeLeases(tag, leases, System.nanoTime());
                long n = hammer(tag, leases, 8, 20_000);
                Stats st = tag.stats();
                ClientTest.check(st.ranges() >= n / 3 && st.leased() >= n,
                    n + " IDs from " + st + ": the ranges were not switched");
            }
        }
    }

    static void hammerServer() throws Exception {
        try (TestServer s = new TestServer(TestServer.newStore("orders", 10));
             FrondClient c = FrondClient.builder().servers(s.url()).build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(1, 3));
            Leases leases = new Leases();
            java.util.function.LongFunction<SegmentTag.Leased> real = tag.leaser;
            tag.leaser = count -> {
                SegmentTag.Leased r = real.apply(count);
                leases.add(r.start(), r.end());
                return r;
            };
            long n = hammer(tag, leases, 8, 300);
            ClientTest.check(tag.stats().ranges() >= n / 3,
                n + " IDs from " + tag.stats() + ": the ranges were not switched");
        }
    }

    /**
     * A next() that runs between a switch's two stores, its load of the
     * bound and its add where the race puts them, gets an ID above the old
     * range and is refused: the cursor is stored first. (Stored the other
     * way round, it would take an ID of the new range that the cursor store
     * then hands out again.)
     */
    static void order() throws Exception {
        try (FrondClient c = FrondClient.builder().servers("http://127.0.0.1:9").build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(100, 100)
                .withValidity(Duration.ZERO));
            Leases leases = new Leases();
            tag.leaser = count -> { // contiguous: [1, 101), [101, 201), ...
                long start = leases.lastEnd();
                leases.add(start, start + count);
                return new SegmentTag.Leased(start, start + count, "a");
            };
            List<Long> between = new ArrayList<>();
            List<long[]> refused = new ArrayList<>();
            tag.switching = () -> {
                // next()'s first steps, as a thread racing the switch runs them
                long b = tag.boundForTest();
                long v = tag.addForTest();
                if (v <= b)
                    between.add(v);
                else
                    refused.add(new long[] {v, b});
            };
            long[] ids = ClientTest.take(tag, 1000);
            ClientTest.check(between.isEmpty(), "IDs " + between
                + " taken between a switch's stores, and again after it");
            // The racers, refused, reach the slow path late, when their range
            // is no longer current: their IDs are skipped, not taken from the
            // current range (where they lie, handed out already).
            ClientTest.check(refused.size() >= 9, refused.size() + " racers for 10 ranges");
            Set<Long> seen = new HashSet<>();
            ClientTest.unique(seen, ids);
            long[] late = new long[refused.size()];
            for (int i = 0; i < late.length; i++) {
                long[] r = refused.get(i);
                late[i] = tag.slowForTest(r[0], r[1]);
                ClientTest.check(seen.add(late[i]), "a racer's late slow path (ID " + r[0]
                    + ", bound " + r[1] + ") took ID " + late[i] + " again");
            }
            ClientTest.increasing("one thread", ids);
            ClientTest.increasing("the late racers", late);
            ClientTest.check(late[0] > ids[999], "late racers below the IDs before them");
            for (long v : ids)
                ClientTest.check(leases.has(v), "ID " + v + " is outside every leased range");
            for (long v : late)
                ClientTest.check(leases.has(v), "ID " + v + " is outside every leased range");
            // The racer's IDs, one a switch, are skipped: without them,
            // 1,000 IDs from contiguous ranges would have been 1 to 1,000.
            ClientTest.check(ids[999] != 1000, "no ID skipped: the racer never ran");
        }
    }

    /** Contiguous ranges of count IDs: [1, 1 + count), then on. */
    static void contiguous(SegmentTag tag, Leases leases) {
        tag.leaser = count -> {
            synchronized (leases) {
                long start = leases.lastEnd();
                leases.add(start, start + count);
                return new SegmentTag.Leased(start, start + count, "a");
            }
        };
    }

    /**
     * What a thread's block keeps and what it does not: a thread that took
     * IDs holds the rest of its block, and none of it outlives the range's
     * switch (another thread used the range up) or its expiry; what the
     * block held is counted as dropped, exactly.
     */
    static void blocks() throws Exception {
        java.util.concurrent.ExecutorService other =
            java.util.concurrent.Executors.newSingleThreadExecutor();
        try (FrondClient c = FrondClient.builder().servers("http://127.0.0.1:9").build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(100, 100)
                .withValidity(Duration.ZERO));
            contiguous(tag, new Leases());
            // the other thread takes 20 of [1, 101); the main thread the
            // rest of the range and the next
            long[] a = other.submit(() -> ClientTest.take(tag, 20)).get();
            long[] b = ClientTest.take(tag, 150);
            long[] a2 = other.submit(() -> ClientTest.take(tag, 1)).get();
            ClientTest.increasing("the other thread", a);
            ClientTest.check(a[19] == 20, "the other thread: " + Arrays.toString(a));
            ClientTest.check(b[0] > 20 && b[0] < 40,
                "the main thread began at " + b[0] + ": the other thread's block");
            ClientTest.check(a2[0] > b[149], "the other thread's next ID, " + a2[0]
                + ", is not above the main thread's last, " + b[149]
                + ": its block outlived the switch");
            Set<Long> seen = new HashSet<>();
            ClientTest.unique(seen, a);
            ClientTest.unique(seen, b);
            ClientTest.unique(seen, a2);
        } finally {
            other.shutdownNow();
        }
        // A switch to a range below (another server of the store, served
        // under the lock) drops the blocks too: the range before's timer is
        // cancelled, so a block kept would outlive the range's validity.
        other = java.util.concurrent.Executors.newSingleThreadExecutor();
        try (FrondClient c = FrondClient.builder().servers("http://127.0.0.1:9").build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(100, 100)
                .withValidity(Duration.ZERO));
            long[] next = {1_000_000};
            tag.leaser = count -> {
                synchronized (next) { // 1,000,000 from server a, then 1, 101, ... from b
                    long start = next[0];
                    next[0] = start == 1_000_000 ? 1 : start + count;
                    return new SegmentTag.Leased(start, start + count, start == 1_000_000 ? "a" : "b");
                }
            };
            long[] a = other.submit(() -> ClientTest.take(tag, 20)).get();
            long[] b = ClientTest.take(tag, 120);
            long a2 = other.submit(() -> tag.next()).get();
            ClientTest.check(a[19] == 1_000_019 && b[b.length - 1] < 1_000_000,
                "the test tests nothing: " + a[19] + ", then " + b[b.length - 1]);
            ClientTest.check(a2 < 1_000_000, "the other thread's next ID, " + a2
                + ", is of the range before the switch: its block outlived it");
        } finally {
            other.shutdownNow();
        }
        // The expiry: 20 IDs taken (a block held) before the range expires.
        // A machine too loaded to take them within the validity tries a
        // longer one.
        for (long ms : new long[] {100, 1_000, 5_000}) {
            try (FrondClient c = FrondClient.builder().servers("http://127.0.0.1:9").build()) {
                SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(1000, 1000)
                    .withValidity(Duration.ofMillis(ms)));
                contiguous(tag, new Leases());
                long[] ids = ClientTest.take(tag, 20);
                if (tag.stats().dropped() != 0 && ms < 5_000)
                    continue; // expired while the 20 were taken
                ClientTest.check(ids[19] == 20, "IDs " + Arrays.toString(ids));
                long deadline = System.nanoTime() + 10_000_000_000L + ms * 1_000_000L;
                while (tag.stats().dropped() == 0 && System.nanoTime() < deadline)
                    Thread.sleep(10);
                long next = tag.next();
                ClientTest.check(next > 1000, "after the range expired: " + next);
                ClientTest.check(tag.stats().dropped() == 980, "dropped " + tag.stats().dropped()
                    + ", want 980: the 1,000 of the range less the 20 handed out");
                return;
            }
        }
    }

    /** A range that ends at Long.MAX_VALUE: callers refused after it push
     *  the cursor past the top, where it wraps to negative values; those are
     *  refused too, never handed out. */
    static void cursorWrap() throws Exception {
        try (FrondClient c = FrondClient.builder().servers("http://127.0.0.1:9").build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(3, 3)
                .withValidity(Duration.ZERO));
            long top = Long.MAX_VALUE;
            boolean[] first = {true};
            tag.leaser = count -> {
                synchronized (first) {
                    if (first[0]) {
                        first[0] = false;
                        return new SegmentTag.Leased(top - 3, top, "a");
                    }
                }
                throw new FrondException(FrondException.UNAVAILABLE, "no more");
            };
            long[] ids = ClientTest.take(tag, 3);
            ClientTest.check(ids[0] == top - 3 && ids[2] == top - 1,
                "IDs " + Arrays.toString(ids));
            for (int i = 0; i < 10; i++)
                ClientTest.expect(FrondException.UNAVAILABLE, 0, () -> {
                    long v = tag.next();
                    throw new AssertionError("an ID past the top: " + v);
                });
            ClientTest.check(tag.addForTest() < 0,
                "the cursor did not wrap: the test tests nothing");
        }
    }
}
