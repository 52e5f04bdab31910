// SPDX-License-Identifier: Apache-2.0
package dev.frond.client;

import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The Java client's tests against real servers; a plain main (no test
 * framework: the client depends on nothing, nor do its tests). Runs every
 * test, prints ok/FAIL lines, exits 1 on any failure.
 * {@code ClientTest child URL N OUT} is the second process of twoProcesses.
 */
public final class ClientTest {
    interface Body { void run() throws Exception; }

    static void check(boolean cond, String msg) {
        if (!cond)
            throw new AssertionError(msg);
    }

    static FrondException expect(String code, int status, Body b) throws Exception {
        try {
            b.run();
        } catch (FrondException e) {
            check(e.code().equals(code) && e.status() == status, "want " + code + " (HTTP "
                + status + "), got " + e.code() + " (HTTP " + e.status() + "): " + e);
            return e;
        }
        throw new AssertionError("want " + code + ", got no error");
    }

    static long[] take(SegmentTag t, int n) {
        long[] a = new long[n];
        for (int i = 0; i < n; i++)
            a[i] = t.next();
        return a;
    }

    static void increasing(String what, long[] ids) {
        for (int i = 1; i < ids.length; i++)
            check(ids[i] > ids[i - 1], what + ": ID " + i + " (" + ids[i]
                + ") is not above the one before (" + ids[i - 1] + ")");
    }

    static void unique(Set<Long> seen, long[] ids) {
        for (long v : ids)
            check(seen.add(v), "ID " + v + " twice");
    }

    static void snowflake() throws Exception {
        try (TestServer s = new TestServer(TestServer.newStore(), "--format.b62", "base62");
             FrondClient c = FrondClient.builder().servers(s.url()).build()) {
            long id = c.next();
            long[] ids = c.nextBatch(5000);
            check(id > 0 && ids.length == 5000, "next, nextBatch");
            long[] all = new long[5001];
            all[0] = id;
            System.arraycopy(ids, 0, all, 1, 5000);
            increasing("batch", all);
            Map<String, Object> f = c.decode(Long.toString(id));
            check(f.get("id").equals(Long.toString(id)) && f.get("node") instanceof Long,
                "decode: " + f);
            List<String> strs = c.format("b62", 3);
            check(strs.size() == 3 && strs.get(0).length() == 11, "format: " + strs);
            check(c.decode(strs.get(0), "b62").get("id") != null, "decode b62");
        }
    }

    static void badInput() throws Exception {
        try (TestServer s = new TestServer(TestServer.newStore("orders", 1000));
             FrondClient c = FrondClient.builder().servers(s.url()).build()) {
            for (String n : new String[] {"", "x".repeat(129), "a\u0001b", "\ud800"})
                expect("TAG_INVALID", 0, () -> c.tag(n));
            expect("INVAL", 0, () -> TagOptions.DEFAULTS.withPreload(1.5));
            expect("INVAL", 0, () -> TagOptions.DEFAULTS.withRange(10, 5));
            check(c.tag("orders") == c.tag("orders"), "two handles for one tag");
            expect("INVAL", 0, () -> c.tag("orders", TagOptions.DEFAULTS.withRange(5, 10)));
            expect("INVAL", 0, () -> FrondClient.builder().servers("127.0.0.1:8080").build());
            expect("INVAL", 0, () -> FrondClient.builder().servers("http://h:1/p").build());
            long before = c.stats().calls();
            expect("TAG_NOT_FOUND", 404, () -> c.tag("nope").next());
            check(c.stats().calls() - before == 1, "a 404 was retried");
            expect("COUNT_INVALID", 0, () -> c.nextBatch(0));
            expect("COUNT_INVALID", 400, () -> c.nextBatch(10_000_000));
            expect("ID_INVALID", 400, () -> c.decode("not an id"));
            expect("FORMAT_NOT_FOUND", 404, () -> c.format("nope", 1));
        }
    }

    static void threads() throws Exception {
        try (TestServer s = new TestServer(TestServer.newStore("orders", 1000));
             FrondClient c = FrondClient.builder().servers(s.url()).build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(100, 5000));
            int T = 8, N = 40000;
            long[][] got = new long[T][];
            ConcurrentLinkedQueue<Throwable> errs = new ConcurrentLinkedQueue<>();
            List<Thread> ts = new ArrayList<>();
            for (int i = 0; i < T; i++) {
                int k = i;
                Thread t = new Thread(() -> {
                    try {
                        got[k] = take(tag, N);
                    } catch (Throwable e) {
                        errs.add(e);
                    }
                });
                t.start();
                ts.add(t);
            }
            for (Thread t : ts)
                t.join(120_000);
            check(errs.isEmpty(), "errors: " + errs);
            Set<Long> seen = new HashSet<>();
            for (int i = 0; i < T; i++) {
                increasing("thread " + i, got[i]);
                unique(seen, got[i]);
            }
            check(tag.awaitFetch(60_000), "a range fetch still in flight after 60 s");
            Stats st = tag.stats();
            check(st.leased() >= (long) T * N && st.ranges() >= 2 && st.ranges() <= 200
                && st.calls() == st.ranges(), "stats " + st);
        }
    }

    static void twoProcesses() throws Exception {
        try (TestServer s = new TestServer(TestServer.newStore("orders", 1000))) {
            Path dir = TestServer.tempDir();
            int N = 100000;
            List<Process> ps = new ArrayList<>();
            for (int p = 0; p < 2; p++) {
                ProcessBuilder pb = new ProcessBuilder(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", System.getProperty("java.class.path"), ClientTest.class.getName(),
                    "child", s.url(), String.valueOf(N), dir.resolve("ids" + p).toString());
                ps.add(pb.inheritIO().start());
            }
            try {
                for (Process p : ps)
                    check(p.waitFor(300, TimeUnit.SECONDS) && p.exitValue() == 0, "child failed");
            } finally {
                for (Process p : ps)
                    p.destroyForcibly();
            }
            Set<Long> seen = new HashSet<>();
            for (int p = 0; p < 2; p++) {
                long[] ids = Files.readAllLines(dir.resolve("ids" + p)).stream()
                    .mapToLong(Long::parseLong).toArray();
                check(ids.length == N, "process " + p + " wrote " + ids.length);
                increasing("process " + p, ids);
                unique(seen, ids);
            }
        }
    }

    static void child(String url, int n, String out) throws Exception {
        try (FrondClient c = FrondClient.builder().servers(url).build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(50, 2000));
            StringBuilder b = new StringBuilder();
            for (long v : take(tag, n))
                b.append(v).append('\n');
            Files.writeString(Path.of(out), b);
        }
    }

    static void serverRestart() throws Exception {
        try (TestServer s = new TestServer(TestServer.newStore("orders", 1000));
             FrondClient c = FrondClient.builder().servers(s.url())
                 .timeout(Duration.ofMillis(500)).build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(5000, 5000));
            long[] a = take(tag, 10);
            s.stop();
            long[] b = take(tag, 3000); // from the buffer alone
            s.start();
            long[] d = take(tag, 20000);
            long[] all = new long[a.length + b.length + d.length];
            System.arraycopy(a, 0, all, 0, a.length);
            System.arraycopy(b, 0, all, a.length, b.length);
            System.arraycopy(d, 0, all, a.length + b.length, d.length);
            increasing("across a restart", all);
            check(tag.stats().ranges() >= 4, "stats " + tag.stats());
        }
    }

    /**
     * Stats taken while ranges arrive never count a range without its IDs
     * (every range here holds 10).
     */
    static void statsRangeWithItsIds() throws Exception {
        try (TestServer s = new TestServer(TestServer.newStore("orders", 1000));
             FrondClient c = FrondClient.builder().servers(s.url()).build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(10, 10));
            java.util.concurrent.atomic.AtomicReference<Stats> torn =
                new java.util.concurrent.atomic.AtomicReference<>();
            java.util.concurrent.atomic.AtomicBoolean done =
                new java.util.concurrent.atomic.AtomicBoolean();
            Thread reader = new Thread(() -> {
                while (!done.get() && torn.get() == null) {
                    Stats st = tag.stats();
                    if (st.leased() < 10 * st.ranges())
                        torn.set(st);
                }
            });
            reader.start();
            try {
                take(tag, 20000);
            } finally { // the reader ends however the test does
                done.set(true);
                reader.join();
            }
            check(torn.get() == null, "stats " + torn.get() + ": a range counted without its IDs");
            Stats st = tag.stats();
            check(st.ranges() >= 2000 && st.leased() >= 10 * st.ranges(),
                "stats " + st + ": not the 2,000 ranges of 10 IDs read");
        }
    }

    /** Whether the server at url names its store in GET /v1/layout. */
    static boolean namesStore(String url) throws Exception {
        var conn = (java.net.HttpURLConnection) new java.net.URI(url + "/v1/layout").toURL()
            .openConnection();
        try (var in = conn.getInputStream()) {
            return Json.object(new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8))
                .containsKey("store");
        } finally {
            conn.disconnect();
        }
    }

    /** For a server that does not name its store: a tag of a client listing
     *  it among others is refused with STORE_MISMATCH; true then. */
    static boolean refusedUnnamed(String url, SegmentTag tag) throws Exception {
        if (namesStore(url))
            return false;
        expect(FrondException.STORE_MISMATCH, 0, tag::next);
        return true;
    }

    /** Two servers on one store, the first killed mid-run: the handle goes
     *  on without an error. The other's ranges may lie below the first's
     *  (each answers from its own buffered segment): IDs stay unique, not
     *  increasing across the kill. */
    static void serverKilled() throws Exception {
        String store = TestServer.newStore("orders", 1000);
        try (TestServer a = new TestServer(store); TestServer b = new TestServer(store);
             FrondClient c = FrondClient.builder().servers(a.url(), b.url())
                 .timeout(Duration.ofSeconds(1)).build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(200, 200));
            if (refusedUnnamed(a.url(), tag))
                return;
            int T = 4, N = 20000;
            long[][] got = new long[T][];
            ConcurrentLinkedQueue<Throwable> errs = new ConcurrentLinkedQueue<>();
            List<Thread> ts = new ArrayList<>();
            for (int i = 0; i < T; i++) {
                int k = i;
                Thread t = new Thread(() -> {
                    try {
                        long[] ids = new long[N];
                        for (int j = 0; j < N; j++) {
                            if (k == 0 && j == N / 4)
                                a.kill();
                            ids[j] = tag.next();
                        }
                        got[k] = ids;
                    } catch (Throwable e) {
                        errs.add(e);
                    }
                });
                t.start();
                ts.add(t);
            }
            for (Thread t : ts)
                t.join(120_000);
            check(errs.isEmpty(), "after the kill: " + errs);
            Set<Long> seen = new HashSet<>();
            for (int i = 0; i < T; i++)
                unique(seen, got[i]);
            check(c.stats().failovers() >= 1, "no failover: " + c.stats());
        }
    }

    static void validity() throws Exception {
        try (TestServer s = new TestServer(TestServer.newStore("orders", 1000));
             FrondClient c = FrondClient.builder().servers(s.url()).build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(1000, 1000)
                .withValidity(Duration.ofMillis(300)));
            long first = tag.next();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (tag.stats().dropped() == 0 && System.nanoTime() < deadline)
                Thread.sleep(20);
            check(tag.stats().dropped() == 999, "dropped " + tag.stats().dropped());
            long next = tag.next();
            check(next >= first + 1000, "after the validity: " + next + " after " + first);
        }
    }

    static void timeouts() throws Exception {
        try (ServerSocket silent = new ServerSocket(0, 50,
                java.net.InetAddress.getByName("127.0.0.1"))) {
            List<Socket> held = new ArrayList<>();
            Thread acceptor = new Thread(() -> {
                try {
                    for (;;)
                        held.add(silent.accept()); // read nothing, answer nothing
                } catch (Exception closed) {
                    // the test is over
                }
            });
            acceptor.setDaemon(true);
            acceptor.start();
            String url = "http://127.0.0.1:" + silent.getLocalPort();
            try (FrondClient c = FrondClient.builder().servers(url)
                    .timeout(Duration.ofMillis(200)).retries(1).build()) {
                long t0 = System.nanoTime();
                expect("TIMEOUT", 0, c::next);
                expect("TIMEOUT", 0, () -> c.tag("orders").next());
                check(System.nanoTime() - t0 < 10_000_000_000L, "calls were not bounded");
            }
            int dead = TestServer.freePort();
            try (FrondClient c = FrondClient.builder().servers("http://127.0.0.1:" + dead)
                    .retries(2).build()) {
                expect("UNAVAILABLE", 0, c::next);
                check(c.stats().calls() == 3 && c.stats().failures() == 3, "stats " + c.stats());
            }
            try (TestServer s = new TestServer(TestServer.newStore("orders", 1000));
                 FrondClient c = FrondClient.builder().servers(url, s.url())
                     .timeout(Duration.ofMillis(200)).build()) {
                c.next();
                if (!refusedUnnamed(s.url(), c.tag("orders")))
                    take(c.tag("orders"), 10);
            }
        }
    }

    static void close() throws Exception {
        try (TestServer s = new TestServer(TestServer.newStore("orders", 1000))) {
            FrondClient c = FrondClient.builder().servers(s.url()).build();
            SegmentTag tag = c.tag("orders");
            take(tag, 10);
            c.close();
            expect("CLOSED", 0, tag::next);
            expect("CLOSED", 0, c::next);
            Stats st = tag.stats();
            check(st.dropped() == st.leased() - 10, "stats " + st);
        }
    }

    static void rangeOrder() throws Exception {
        try (TestServer a = new TestServer(TestServer.newStore("orders", 1000));
             TestServer other = new TestServer(TestServer.newStore("orders", 1000));
             FrondClient c = FrondClient.builder().servers(a.url(), other.url())
                 .retries(1).build()) {
            // servers on different stores: once a is gone, other's range
            // is refused
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(1000, 1000));
            if (refusedUnnamed(a.url(), tag))
                return;
            tag.next(); // [1, 1001) from a's store
            a.kill();
            int n = 1;
            FrondException err = null;
            for (; n <= 2000 && err == null; n++) {
                try {
                    tag.next();
                } catch (FrondException e) {
                    err = e;
                }
            }
            check(err != null && err.code().equals(FrondException.STORE_MISMATCH),
                "want STORE_MISMATCH: " + err);
            check(n - 1 == 1000, "the refusal came at call " + (n - 1));
        }
    }

    /** A 503 moves the call to the next server; from every server, it is
     *  the server's code after the retries. */
    static void failoverOn503() throws Exception {
        try (TestServer none = new TestServer("none");
             TestServer good = new TestServer(TestServer.newStore("orders", 1000))) {
            try (FrondClient c = FrondClient.builder().servers(none.url(), good.url()).build()) {
                if (refusedUnnamed(good.url(), c.tag("orders")))
                    return;
                take(c.tag("orders"), 10);
                check(c.stats().failovers() == 1 && c.stats().failures() == 1,
                    "want one 503 and one failover: " + c.stats());
            }
            try (FrondClient c = FrondClient.builder().servers(none.url()).retries(2).build()) {
                expect("SEGMENT_UNAVAILABLE", 503, () -> c.tag("orders").next());
                check(c.stats().calls() == 3, "a 503 was not tried 3 times: " + c.stats());
            }
        }
    }

    /** The range size follows the rate: it doubles while ranges are
     *  fetched less than the target apart, up to the maximum, stays between
     *  the target and twice the target, and halves beyond, down to the
     *  minimum (on a clock the test moves). */
    static void rangeSize() throws Exception {
        try (TestServer s = new TestServer(TestServer.newStore("orders", 1000));
             FrondClient c = FrondClient.builder().servers(s.url()).build()) {
            SegmentTag tag = c.tag("orders", TagOptions.DEFAULTS.withRange(100, 800)
                .withTarget(Duration.ofMinutes(1)).withValidity(Duration.ZERO));
            AtomicLong clock = new AtomicLong(1_000_000_000L);
            tag.sizingClock = clock::get;
            long sec = 1_000_000_000L;
            long[] gaps = {0, sec, sec, sec, sec, 90 * sec, 180 * sec, 180 * sec, 180 * sec,
                180 * sec};
            List<Long> sizes = new ArrayList<>();
            for (int i = 0; i < gaps.length; i++) {
                clock.addAndGet(gaps[i]);
                long before = tag.stats().leased();
                for (int n = 0; tag.stats().ranges() == i; n++) {
                    check(n < 10000, "no range " + (i + 1) + " after 10,000 IDs");
                    tag.next();
                }
                sizes.add(tag.stats().leased() - before);
            }
            check(sizes.equals(List.of(100L, 200L, 400L, 800L, 800L, 800L, 400L, 200L, 100L, 100L)),
                "range sizes " + sizes);
        }
    }

    /** The JSON reader and the range check, on a corpus and on bounded
     *  random mutations of it: a value or a FrondException BAD_RESPONSE,
     *  never another exception. */
    static void fuzzJson() throws Exception {
        Path corpus = Path.of(System.getProperty("frond.corpus", "test/corpus"));
        List<String> seeds = new ArrayList<>();
        try (var files = Files.list(corpus)) {
            for (Path p : (Iterable<Path>) files::iterator)
                seeds.add(Files.readString(p));
        }
        check(seeds.size() >= 5, "corpus " + corpus + " has " + seeds.size() + " inputs");
        Random r = new Random(24);
        String alphabet = "{}[]\":,\\-+.0123456789eEtrufalsn \u0000\u00ff\ud800";
        for (int i = 0; i < 50000; i++) {
            StringBuilder b = new StringBuilder(seeds.get(r.nextInt(seeds.size())));
            for (int m = r.nextInt(4); m >= 0; m--) {
                int at = b.length() == 0 ? 0 : r.nextInt(b.length());
                switch (r.nextInt(3)) {
                case 0 -> b.insert(at, alphabet.charAt(r.nextInt(alphabet.length())));
                case 1 -> { if (b.length() > 0) b.deleteCharAt(at); }
                default -> b.setLength(at);
                }
            }
            String in = b.toString();
            try {
                Object v = Json.parse(in);
                if (v instanceof Map<?, ?> m)
                    SegmentTag.parseRange(m.get("start"), m.get("end"), m.get("count"), 1000);
            } catch (FrondException e) {
                check(e.code().equals("BAD_RESPONSE"), "code " + e.code() + " for " + in);
            } catch (RuntimeException | StackOverflowError e) {
                throw new AssertionError("input " + in + ": " + e, e);
            }
        }
        check(Json.object("{\"a\":[1,-2.5e3,\"\\u00e9\",true,null]}").get("a") instanceof List,
            "a valid object");
        expect("BAD_RESPONSE", 0, () -> Json.parse("[".repeat(100)));
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 4 && args[0].equals("child")) {
            child(args[1], Integer.parseInt(args[2]), args[3]);
            return;
        }
        Object[][] tests = {
            {"fuzzJson", (Body) ClientTest::fuzzJson},
            {"snowflake", (Body) ClientTest::snowflake},
            {"badInput", (Body) ClientTest::badInput},
            {"threads", (Body) ClientTest::threads},
            {"twoProcesses", (Body) ClientTest::twoProcesses},
            {"serverRestart", (Body) ClientTest::serverRestart},
            {"statsRangeWithItsIds", (Body) ClientTest::statsRangeWithItsIds},
            {"serverKilled", (Body) ClientTest::serverKilled},
            {"validity", (Body) ClientTest::validity},
            {"timeouts", (Body) ClientTest::timeouts},
            {"close", (Body) ClientTest::close},
            {"rangeOrder", (Body) ClientTest::rangeOrder},
            {"failoverOn503", (Body) ClientTest::failoverOn503},
            {"rangeSize", (Body) ClientTest::rangeSize},
            {"switchOrder", (Body) SwitchTest::order},
            {"switchHammer", (Body) SwitchTest::hammerFake},
            {"switchHammerServer", (Body) SwitchTest::hammerServer},
            {"cursorWrap", (Body) SwitchTest::cursorWrap},
            {"blocks", (Body) SwitchTest::blocks},
            {"fakeFailoverOneStore", (Body) FakeTest::failoverOneStore},
            {"fakeStoreMismatch", (Body) FakeTest::storeMismatch},
            {"fakeBadRange", (Body) FakeTest::badRange},
            {"fakeMaxRange", (Body) FakeTest::maxRange},
            {"fakeFailedLoads", (Body) FakeTest::failedLoads},
            {"fakeErrorInFetch", (Body) FakeTest::errorInFetch},
            {"fakeWaitedRangeInstalled", (Body) FakeTest::waitedRangeInstalled},
        };
        int failed = 0;
        for (Object[] t : tests) {
            if (args.length > 0 && !List.of(args).contains((String) t[0]))
                continue;
            long t0 = System.nanoTime();
            try {
                ((Body) t[1]).run();
                System.out.printf("ok   %s (%.1fs)%n", t[0], (System.nanoTime() - t0) / 1e9);
            } catch (Throwable e) {
                failed++;
                TestServer.keepDirs();
                System.out.println("FAIL " + t[0] + ": " + e);
                e.printStackTrace(System.out);
            }
        }
        System.out.println(failed == 0 ? "all passed" : failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }
}
