// SPDX-License-Identifier: Apache-2.0
package dev.frond.client;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The Java client of Frond's HTTP /v1 API: snowflake IDs, segment IDs
 * handed out in-process from ranges leased from the server, ID formats
 * and decoding, over a list of servers with failover. Thread-safe: make
 * one per process and share it; {@link SegmentTag#next()} is the hot path.
 */
public final class FrondClient implements AutoCloseable {
    public static final String VERSION = "0.1.0";
    public static final String DEFAULT_SERVER = "http://127.0.0.1:8080";
    static final long BACKOFF_BASE_MS = 50, BACKOFF_CAP_MS = 1000;

    private final List<String> servers;
    private final Object storeLock = new Object();
    private String store, storeAt; // the first store a range named, and by whom
    private final Duration timeout;
    private final int retries;
    private final String token;
    private final HttpClient http;
    // Range fetches. Not the HttpClient's executor: close() shuts this one
    // down, and a request still running on a shut-down executor has its
    // tasks rejected (the JDK prints them) and never completes.
    private final ExecutorService pool;
    final ScheduledExecutorService timers; // validity
    private final AtomicInteger cur = new AtomicInteger();
    private final Map<String, SegmentTag> tags = new HashMap<>();
    private volatile boolean closed;
    final AtomicLong calls = new AtomicLong(), failures = new AtomicLong(),
        failovers = new AtomicLong();

    /** How a client is made; {@link FrondClient#builder()}. */
    public static final class Builder {
        private List<String> servers = new ArrayList<>();
        private Duration timeout = Duration.ofSeconds(2);
        private int retries = 3;
        private String token;

        /** Base URLs ({@code http://10.0.0.5:8080}); none: FROND_SERVERS,
         *  else http://127.0.0.1:8080. */
        public Builder servers(String... urls) { servers = List.of(urls); return this; }
        public Builder servers(List<String> urls) { servers = List.copyOf(urls); return this; }
        /** Bounds each attempt of a call, connecting included (2 s). */
        public Builder timeout(Duration d) { timeout = d; return this; }
        /** Attempts after the first, on the next server, after a
         *  connection error, a timeout or a 503 (3). */
        public Builder retries(int n) { retries = n; return this; }
        /** Sent as "Authorization: Bearer token". */
        public Builder token(String t) { token = t; return this; }
        public FrondClient build() { return new FrondClient(this); }
    }

    public static Builder builder() { return new Builder(); }

    /** A client with the defaults: FROND_SERVERS or http://127.0.0.1:8080. */
    public static FrondClient create() { return builder().build(); }

    private FrondClient(Builder b) {
        List<String> list = new ArrayList<>(b.servers);
        if (list.isEmpty()) {
            String env = System.getenv("FROND_SERVERS");
            if (env != null)
                for (String s : env.split(","))
                    if (!s.isBlank())
                        list.add(s.strip());
        }
        if (list.isEmpty())
            list.add(DEFAULT_SERVER);
        List<String> ok = new ArrayList<>();
        for (String s : list) {
            URI u;
            try {
                u = new URI(s);
            } catch (Exception e) {
                u = null;
            }
            if (u == null || !("http".equals(u.getScheme()) || "https".equals(u.getScheme()))
                || u.getRawAuthority() == null || u.getRawQuery() != null
                || u.getRawFragment() != null
                || !(u.getRawPath() == null || u.getRawPath().isEmpty()
                     || u.getRawPath().equals("/")))
                throw new FrondException(FrondException.INVAL, "server \"" + s
                    + "\" is not a base URL such as http://127.0.0.1:8080");
            ok.add(u.getScheme() + "://" + u.getRawAuthority());
        }
        if (b.timeout == null || b.timeout.isNegative() || b.timeout.isZero())
            throw new FrondException(FrondException.INVAL, "timeout " + b.timeout
                + " is not a positive duration");
        if (b.retries < 0)
            throw new FrondException(FrondException.INVAL, "retries " + b.retries
                + " is negative");
        servers = List.copyOf(ok);
        timeout = b.timeout;
        retries = b.retries;
        token = b.token;
        pool = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "frond-client");
            t.setDaemon(true);
            return t;
        });
        timers = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "frond-client-timer");
            t.setDaemon(true);
            return t;
        });
        http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(timeout).followRedirects(HttpClient.Redirect.NEVER)
            .build();
    }

    /** The base URLs the client calls, in failover order. */
    public List<String> servers() { return servers; }

    /** One snowflake ID. */
    public long next() { return nextBatch(1)[0]; }

    /** n snowflake IDs, increasing (n from 1 to the server's max_count). */
    public long[] nextBatch(int n) {
        if (n < 1)
            throw new FrondException("COUNT_INVALID", "count " + n + " is not at least 1");
        List<String> s = strings("/v1/snowflake?count=" + n, n);
        long[] ids = new long[n];
        for (int i = 0; i < n; i++) {
            try {
                ids[i] = Long.parseLong(s.get(i));
            } catch (NumberFormatException e) {
                throw new FrondException(FrondException.BAD_RESPONSE, "ID \""
                    + s.get(i) + "\" is not a 64-bit integer");
            }
        }
        return ids;
    }

    /** count strings of the server's format {@code name}. */
    public List<String> format(String name, int count) {
        if (name == null || name.isEmpty())
            throw new FrondException(FrondException.INVAL, "a format name is needed");
        if (count < 1)
            throw new FrondException("COUNT_INVALID", "count " + count + " is not at least 1");
        return strings("/v1/format/" + pathEscape(name) + "?count=" + count, count);
    }

    /** The fields of an ID or ID string, read by its shape. */
    public Map<String, Object> decode(String s) { return decode(s, null); }

    /** The fields of an ID string of the server's format (null: by shape).
     *  IDs are strings, times RFC 3339, other numbers Long. */
    public Map<String, Object> decode(String s, String format) {
        if (s == null || s.isEmpty())
            throw new FrondException("ID_INVALID", "an empty string is no ID");
        String path = "/v1/decode/" + pathEscape(s);
        if (format != null)
            path += "?format=" + URLEncoder.encode(format, StandardCharsets.UTF_8);
        return Json.object(get(path, null));
    }

    /** The handle of a segment tag with the default options. */
    public SegmentTag tag(String name) { return tag(name, null); }

    /** The handle of a segment tag, the same one for the same name (opts:
     *  null for the defaults, else the first call's). No server is called:
     *  the first next() leases the first range. */
    public SegmentTag tag(String name, TagOptions opts) {
        SegmentTag.checkName(name);
        synchronized (tags) {
            if (closed)
                throw new FrondException(FrondException.CLOSED, "the client is closed");
            SegmentTag t = tags.get(name);
            if (t != null) {
                if (opts != null && !opts.equals(t.options()))
                    throw new FrondException(FrondException.INVAL, "tag \"" + name
                        + "\" already has a handle with other options");
                return t;
            }
            t = new SegmentTag(this, name, opts != null ? opts : TagOptions.DEFAULTS);
            tags.put(name, t);
            return t;
        }
    }

    /** The client's counts, its tags' summed. */
    public Stats stats() {
        long r = 0, l = 0, d = 0;
        synchronized (tags) {
            for (SegmentTag t : tags.values()) {
                Stats s = t.stats();
                r += s.ranges();
                l += s.leased();
                d += s.dropped();
            }
        }
        return new Stats(calls.get(), failures.get(), failovers.get(), r, l, d);
    }

    /** Drops every tag's buffered ranges (their IDs skipped, never reused);
     *  every later call fails with CLOSED. */
    @Override
    public void close() {
        List<SegmentTag> all;
        synchronized (tags) {
            closed = true;
            all = new ArrayList<>(tags.values());
        }
        for (SegmentTag t : all)
            t.close();
        timers.shutdownNow();
        pool.shutdown();
    }

    boolean isClosed() { return closed; }

    void runInBackground(Runnable r) {
        try {
            pool.execute(r);
        } catch (RuntimeException e) { // closed meanwhile
            r.run();
        }
    }

    /** The longest a call can take: every attempt's timeout, every backoff
     *  at its cap. */
    long boundMillis() {
        return (retries + 1) * timeout.toMillis() + retries * BACKOFF_CAP_MS;
    }

    private List<String> strings(String path, int n) {
        Object ids = Json.object(get(path, null)).get("ids");
        if (!(ids instanceof List) || ((List<?>) ids).size() != n)
            throw new FrondException(FrondException.BAD_RESPONSE,
                "answer to " + path + " is not " + n + " IDs");
        List<String> out = new ArrayList<>(n);
        for (Object o : (List<?>) ids) {
            if (!(o instanceof String))
                throw new FrondException(FrondException.BAD_RESPONSE,
                    "answer to " + path + " holds a non-string ID");
            out.add((String) o);
        }
        return out;
    }

    static String pathEscape(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    /**
     * GET path on the current server; after a connection error, a timeout
     * or a 503, the next server, up to {@code retries} more times, with
     * full-jitter backoff. A 4xx is never retried. counter, if not null,
     * counts the attempts.
     */
    String get(String path, AtomicLong counter) {
        return get(path, counter, (body, h, srv) -> body);
    }

    /** Takes a 200 answer of server srv, or refuses it by throwing. */
    interface Checker<T> {
        T check(String body, HttpHeaders headers, String srv);
    }

    /**
     * get, with check run on each 200 answer: a STORE_MISMATCH it throws
     * moves the call to the next server as a 503 does, and is the call's
     * error if no server gives an answer check takes; any other exception
     * it throws ends the call.
     */
    <T> T get(String path, AtomicLong counter, Checker<T> check) {
        if (closed)
            throw new FrondException(FrondException.CLOSED, "the client is closed");
        FrondException last = null, mismatch = null;
        for (int attempt = 0; attempt <= retries; attempt++) {
            if (attempt > 0) {
                long cap = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS << Math.min(attempt - 1, 20));
                try {
                    Thread.sleep(ThreadLocalRandom.current().nextLong(cap));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new FrondException(FrondException.TIMEOUT,
                        "interrupted while waiting to retry", 0, null, e);
                }
            }
            int idx = cur.get();
            String srv = servers.get(Math.floorMod(idx, servers.size()));
            calls.incrementAndGet();
            if (counter != null)
                counter.incrementAndGet();
            Attempt a = once(srv, path);
            FrondException err = a.error;
            boolean retry = a.retry;
            if (a.body != null) {
                try {
                    return check.check(a.body, a.headers, srv);
                } catch (FrondException e) {
                    if (!e.code().equals(FrondException.STORE_MISMATCH))
                        throw e;
                    err = mismatch = e;
                    retry = true;
                }
            }
            if (!retry)
                throw err;
            last = err;
            failures.incrementAndGet();
            if (servers.size() > 1 && cur.compareAndSet(idx, idx + 1))
                failovers.incrementAndGet();
        }
        // A server of another store outweighs one that did not answer.
        throw mismatch != null ? mismatch : last;
    }

    /**
     * Checks the store server srv names in a range answer ("store", or the
     * Frond-Store header) against the one the client pinned: the first one
     * seen. A server that names none (older than the store's identity) is
     * trusted only when it is the only one listed.
     */
    void checkStore(Object body, List<String> header, String srv) {
        if (header.size() > 1 || (body != null && header.size() == 1
                                  && !body.equals(header.get(0))))
            throw new FrondException(FrondException.BAD_RESPONSE, "the answer names store "
                + body + " in its body and " + header + " in Frond-Store", 0, srv, null);
        Object st = body != null ? body : header.isEmpty() ? null : header.get(0);
        if (st == null) {
            if (servers.size() > 1)
                throw new FrondException(FrondException.STORE_MISMATCH, srv
                    + " does not name its store (a server older than the store identity):"
                    + " with several servers listed, ranges are taken only from servers"
                    + " that name one, so that servers on different stores are never mixed",
                    0, srv, null);
            return;
        }
        if (!(st instanceof String s) || !s.matches("[0-9a-f]{32}"))
            throw new FrondException(FrondException.BAD_RESPONSE, "the answer names store "
                + st + ", not 32 lowercase hex digits", 0, srv, null);
        synchronized (storeLock) {
            if (store == null) {
                store = s;
                storeAt = srv;
            } else if (!store.equals(s)) {
                throw new FrondException(FrondException.STORE_MISMATCH, srv + " serves store "
                    + s + ", but " + storeAt + " served store " + store + ": servers on"
                    + " different stores hand out the same IDs; its range is not used",
                    0, srv, null);
            }
        }
    }

    private record Attempt(String body, HttpHeaders headers, FrondException error,
                           boolean retry) {}

    private Attempt once(String srv, String path) {
        HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(srv + path))
            .timeout(timeout).header("User-Agent", "frond-java/" + VERSION)
            .header("Accept", "application/json").GET();
        if (token != null)
            rb.header("Authorization", "Bearer " + token);
        CompletableFuture<HttpResponse<String>> f =
            http.sendAsync(rb.build(), HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> r;
        try {
            r = f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            return new Attempt(null, null, new FrondException(FrondException.TIMEOUT,
                "no answer within " + timeout.toMillis() + " ms", 0, srv, e), true);
        } catch (InterruptedException e) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            return new Attempt(null, null, new FrondException(FrondException.TIMEOUT,
                "interrupted", 0, srv, e), false);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            boolean t = c instanceof HttpTimeoutException;
            String what = t ? "no answer within " + timeout.toMillis() + " ms"
                : c instanceof ConnectException ? "cannot reach the server"
                : "the connection failed";
            return new Attempt(null, null, new FrondException(
                t ? FrondException.TIMEOUT : FrondException.UNAVAILABLE,
                what + ": " + c, 0, srv, c), c instanceof IOException || t);
        }
        if (r.statusCode() == 200)
            return new Attempt(r.body(), r.headers(), null, false);
        String code = FrondException.BAD_RESPONSE;
        String msg = "HTTP " + r.statusCode() + " without a Frond error body";
        try {
            Object e = Json.object(r.body()).get("error");
            if (e instanceof Map<?, ?> m && m.get("code") instanceof String c) {
                code = c;
                msg = String.valueOf(m.get("message"));
            }
        } catch (FrondException ignored) {
            // not JSON: BAD_RESPONSE with the status
        }
        return new Attempt(null, null, new FrondException(code, msg, r.statusCode(), srv, null),
            r.statusCode() == 503);
    }
}
