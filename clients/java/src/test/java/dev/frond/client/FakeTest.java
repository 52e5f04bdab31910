// SPDX-License-Identifier: Apache-2.0
package dev.frond.client;

import static dev.frond.client.ClientTest.check;
import static dev.frond.client.ClientTest.expect;
import static dev.frond.client.ClientTest.take;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongFunction;

/**
 * Servers faked in the test's process (com.sun.net.httpserver on loopback):
 * several on one in-memory store, each answering ranges from its own
 * buffered segment as a real server does, naming their store or not,
 * refusing sizes above their max_range, or answering what a test says.
 */
final class FakeTest {
    static final String X = "0123456789abcdef0123456789abcdef";
    static final String Y = "fedcba9876543210fedcba9876543210";

    /** Segments of step IDs, in order, as leaf_alloc hands them out. */
    static final class MemStore {
        final long step;
        long next = 1;

        MemStore(long step) { this.step = step; }

        synchronized long[] segment() {
            long s = next;
            next += step;
            return new long[] {s, next};
        }
    }

    static final class Fake implements AutoCloseable {
        final HttpServer http;
        final MemStore st;
        final String id; // the store it names; null for none
        volatile long maxRange = 1_000_000;
        volatile boolean down;
        volatile boolean boundInMessage = true;
        final AtomicReference<String[]> answer = new AtomicReference<>(); // body, Frond-Store
        long pos, end; // its buffered segment, guarded by this
        final SwitchTest.Leases leased = new SwitchTest.Leases();
        final List<Long> sizes = new ArrayList<>();

        Fake(MemStore st, String id) throws IOException {
            this.st = st;
            this.id = id;
            http = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            http.createContext("/", this::serve);
            http.start();
        }

        String url() { return "http://127.0.0.1:" + http.getAddress().getPort(); }

        synchronized void load() {
            long[] s = st.segment();
            pos = s[0];
            end = s[1];
        }

        private void send(HttpExchange x, int status, String body, String store)
            throws IOException {
            byte[] b = body.getBytes(StandardCharsets.UTF_8);
            if (store != null)
                x.getResponseHeaders().set("Frond-Store", store);
            x.sendResponseHeaders(status, b.length);
            x.getResponseBody().write(b);
            x.close();
        }

        private void serve(HttpExchange x) throws IOException {
            if (down) {
                send(x, 503, "{\"error\":{\"code\":\"SEGMENT_UNAVAILABLE\",\"message\":\"down\"}}",
                    null);
                return;
            }
            String[] a = answer.get();
            if (a != null) {
                send(x, 200, a[0], a[1]);
                return;
            }
            String q = x.getRequestURI().getQuery();
            long n = q != null && q.startsWith("count=") ? Long.parseLong(q.substring(6)) : 1;
            if (n > maxRange) {
                String msg = boundInMessage ? "count must be an integer in [1, " + maxRange + "]"
                    : "too many";
                send(x, 400, "{\"error\":{\"code\":\"COUNT_INVALID\",\"message\":\"" + msg
                    + "\"}}", null);
                return;
            }
            long start;
            synchronized (this) {
                if (pos + n > end) {
                    long[] s = st.segment();
                    pos = s[0];
                    end = s[1];
                    while (pos + n > end)
                        end = st.segment()[1];
                }
                start = pos;
                pos += n;
                sizes.add(n);
            }
            leased.add(start, start + n);
            send(x, 200, "{\"tag\":\"orders\",\"start\":\"" + start + "\",\"end\":\""
                + (start + n) + "\",\"count\":" + n
                + (id != null ? ",\"store\":\"" + id + "\"" : "") + "}", id);
        }

        @Override
        public void close() { http.stop(0); }
    }

    /** Two servers of one store, b's segment buffered before a's: once a
     *  fails, b's ranges lie below a's. They are taken, IDs stay unique and
     *  only IDs the servers leased are handed out (before: each of b's
     *  ranges was refused as BAD_RESPONSE). */
    static void failoverOneStore() throws Exception {
        MemStore st = new MemStore(1000);
        try (Fake a = new Fake(st, X); Fake b = new Fake(st, X);
             FrondClient c = FrondClient.builder().servers(a.url(), b.url()).retries(2).build()) {
            b.load();
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(100, 100));
            List<Long> ids = new ArrayList<>();
            for (long v : take(tag, 450))
                ids.add(v);
            a.down = true;
            for (long v : take(tag, 2500))
                ids.add(v);
            a.down = false;
            b.down = true;
            for (long v : take(tag, 500))
                ids.add(v);
            Set<Long> seen = new HashSet<>();
            long hi = 0;
            int lower = 0;
            for (long v : ids) {
                check(seen.add(v), "ID " + v + " twice");
                check(a.leased.has(v) || b.leased.has(v), "ID " + v + " leased by no server");
                if (v < hi)
                    lower++;
                hi = Math.max(hi, v);
            }
            check(lower > 0, "no failover to lower ranges");
        }
        // One server alone is trusted without a store.
        try (Fake a = new Fake(new MemStore(1000), null);
             FrondClient c = FrondClient.builder().servers(a.url()).build()) {
            take(c.tag("orders", TagOptions.DEFAULTS.withRange(100, 100)), 1000);
        }
    }

    /** Servers of two stores hand out the same IDs: the second's range is
     *  refused with STORE_MISMATCH naming both, and none of its IDs used. */
    static void storeMismatch() throws Exception {
        try (Fake a = new Fake(new MemStore(1000), X); Fake b = new Fake(new MemStore(1000), Y);
             FrondClient c = FrondClient.builder().servers(a.url(), b.url()).retries(2).build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(100, 100));
            List<Long> ids = new ArrayList<>();
            for (long v : take(tag, 50))
                ids.add(v);
            a.down = true;
            FrondException err = null;
            for (int i = 0; i < 1000 && err == null; i++) {
                try {
                    ids.add(tag.next());
                } catch (FrondException e) {
                    err = e;
                }
            }
            check(err != null && err.code().equals(FrondException.STORE_MISMATCH),
                "want STORE_MISMATCH: " + err);
            for (String s : new String[] {a.url(), b.url(), X, Y})
                check(err.getMessage().contains(s), err.getMessage() + " does not name " + s);
            for (long v : ids)
                check(a.leased.has(v), "ID " + v + " is not from the first server");
            // a server that names no store, among several: refused too
            try (Fake old = new Fake(new MemStore(1000), null);
                 FrondClient c2 = FrondClient.builder().servers(old.url(), a.url()).retries(0)
                     .build()) {
                FrondException e = expect(FrondException.STORE_MISMATCH, 0,
                    () -> c2.tag("orders").next());
                check(e.getMessage().contains("does not name its store"), e.getMessage());
            }
        }
    }

    /** A range's bounds are strings of decimal digits, nothing else. */
    static void badRange() throws Exception {
        String[][] bad = {
            {"{\"start\":1,\"end\":101,\"count\":100}", null},
            {"{\"start\":\"\",\"end\":\"100\",\"count\":100}", null},
            {"{\"start\":\"1_000\",\"end\":\"1100\",\"count\":100}", null},
            {"{\"start\":\"1993.7\",\"end\":\"2093.7\",\"count\":100}", null},
            {"{\"start\":\"+1\",\"end\":\"101\",\"count\":100}", null},
            {"{\"start\":\"1\",\"end\":\"1e2\",\"count\":99}", null},
            {"{\"start\":\"1\",\"end\":\"101\",\"count\":100,\"store\":\"XYZ\"}", null},
            {"{\"start\":\"1\",\"end\":\"101\",\"count\":100,\"store\":7}", null},
            {"{\"start\":\"1\",\"end\":\"101\",\"count\":100,\"store\":\"" + X + "\"}", Y},
            {"[1, 101]", null},
        };
        for (String[] a : bad) {
            try (Fake f = new Fake(new MemStore(1000), null);
                 FrondClient c = FrondClient.builder().servers(f.url()).build()) {
                f.answer.set(a);
                expect(FrondException.BAD_RESPONSE, 0,
                    () -> c.tag("orders", TagOptions.DEFAULTS.withRange(100, 100)).next());
            }
        }
    }

    /** A server whose max_range is below the size asked for: the handle
     *  learns it from COUNT_INVALID and the call succeeds, within it from
     *  then on; without the bound in the message, the size halves. */
    static void maxRange() throws Exception {
        try (Fake f = new Fake(new MemStore(1000), X);
             FrondClient c = FrondClient.builder().servers(f.url()).build()) {
            f.maxRange = 400;
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(1000, 8000)
                .withValidity(Duration.ZERO));
            take(tag, 3000);
            check(tag.awaitFetch(60_000), "a range fetch still in flight after 60 s");
            synchronized (f) {
                for (long n : f.sizes)
                    check(n <= 400, "a range of " + n + " IDs");
            }
            Stats s = tag.stats();
            check(s.calls() == s.ranges() + 1, s + ": the bound was not kept");
        }
        try (Fake f = new Fake(new MemStore(1000), null);
             FrondClient c = FrondClient.builder().servers(f.url()).build()) {
            f.maxRange = 300;
            f.boundInMessage = false;
            take(c.tag("orders", TagOptions.DEFAULTS.withRange(1000, 1000)), 1000);
            synchronized (f) {
                check(f.sizes.get(0) == 250, "first range of " + f.sizes.get(0) + ", want 250");
            }
        }
    }

    /** A fetch that ends in an Error, not an exception, ends all the same:
     *  the call waiting for it is told (the Error its cause), and the next
     *  call fetches again. The Error goes on to the client's thread, whose
     *  stack trace ("the test's Error in a range fetch") is in the log. */
    static void errorInFetch() throws Exception {
        try (Fake f = new Fake(new MemStore(1000), null);
             FrondClient c = FrondClient.builder().servers(f.url()).retries(0)
                 .timeout(Duration.ofSeconds(2)).build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(100, 100));
            LongFunction<SegmentTag.Leased> real = tag.leaser;
            AtomicBoolean thrown = new AtomicBoolean();
            tag.leaser = count -> {
                if (thrown.compareAndSet(false, true))
                    throw new StackOverflowError("the test's Error in a range fetch");
                return real.apply(count);
            };
            FrondException e = expect(FrondException.UNAVAILABLE, 0, tag::next);
            check(e.getCause() instanceof StackOverflowError, "its cause: " + e.getCause());
            take(tag, 250);
        }
    }

    /** Failed loads leave the size as it was: it adapts once per range used. */
    static void failedLoads() throws Exception {
        try (Fake f = new Fake(new MemStore(100_000), null);
             FrondClient c = FrondClient.builder().servers(f.url()).retries(0).build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(100, 100_000)
                .withValidity(Duration.ZERO));
            take(tag, 100);
            f.down = true;
            for (int i = 0; i < 8; i++) {
                boolean failed = false;
                try {
                    tag.next();
                } catch (FrondException e) {
                    failed = true;
                }
                check(failed, "an ID with the server down");
            }
            f.down = false;
            take(tag, 1);
            synchronized (f) {
                long last = f.sizes.get(f.sizes.size() - 1);
                check(last <= 200, "the size grew with failed loads: " + f.sizes);
            }
        }
    }

    /** A call that waited for a fetch and finds, once it holds the lock
     *  again, that another call installed the fetched range and that a
     *  later fetch (the preload) failed, takes an ID of that range: it
     *  still has IDs. Before, the call threw the later fetch's error. */
    static void waitedRangeInstalled() throws Exception {
        try (FrondClient c = FrondClient.builder().servers("http://127.0.0.1:9")
                 .retries(0).build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(100, 100)
                .withPreload(0.5).withValidity(Duration.ZERO));
            Object lock = tag.lockForTest();
            AtomicInteger fetches = new AtomicInteger();
            AtomicBoolean held = new AtomicBoolean(), resume = new AtomicBoolean();
            CountDownLatch woke = new CountDownLatch(1);
            tag.leaser = count -> {
                if (fetches.incrementAndGet() == 1)
                    return new SegmentTag.Leased(1, 101, "a"); // [1, 100], preload at 51
                throw new FrondException(FrondException.UNAVAILABLE, "the preload fails");
            };
            tag.waited = () -> {
                if (!held.compareAndSet(false, true))
                    return; // the first wait only
                woke.countDown();
                long end = System.nanoTime() + 30_000_000_000L;
                try { // waiting gives the lock up: the others run meanwhile
                    while (!resume.get() && System.nanoTime() < end)
                        lock.wait(100);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            };
            AtomicReference<Object> got = new AtomicReference<>();
            Thread a = new Thread(() -> {
                try {
                    got.set(tag.next());
                } catch (FrondException e) {
                    got.set(e);
                }
            });
            a.start();
            Set<Long> mine = new HashSet<>();
            try {
                check(woke.await(30, TimeUnit.SECONDS),
                    "the first call did not wait for a fetch within 30 s");
                // Meanwhile this thread installs the range and takes it to
                // its preload point (its blocks keep some IDs past it), and
                // the preload fails.
                for (int i = 0; i < 100; i++) {
                    mine.add(tag.next());
                    if (!tag.awaitFetch(0) || fetches.get() > 1)
                        break; // the preload started
                }
                check(tag.awaitFetch(30_000), "the preload did not end within 30 s");
                check(fetches.get() == 2, fetches.get() + " fetches, want 2: the test tests nothing");
            } finally {
                synchronized (lock) {
                    resume.set(true);
                    lock.notifyAll();
                }
            }
            a.join(30_000);
            check(!a.isAlive(), "the call that waited did not return within 30 s");
            check(got.get() instanceof Long id && id >= 1 && id <= 100 && !mine.contains(id),
                "the call that waited got " + got.get() + "; want an ID of [1, 100] this "
                + "thread did not get: the range had " + (100 - mine.size()) + " more");
        }
    }
}
