// SPDX-License-Identifier: Apache-2.0
package dev.frond.client;

import java.io.File;
import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * A real `frond serve` ($FROND_BIN) on a free loopback port in a temp dir,
 * for the tests. Every one started is stopped when the test program ends,
 * passed or failed (a shutdown hook, and the suite's wrapper kills what a
 * killed JVM left), and then the temp dirs go, but when a test failed
 * ({@link #keepDirs}) or FRONDTEST_KEEP_TMP is set: then each is named.
 * Sanitizer reports it writes fail the test at stop.
 */
final class TestServer implements AutoCloseable {
    static final List<TestServer> OPEN = new ArrayList<>();
    static final List<Path> DIRS = new ArrayList<>();
    private static volatile boolean keep = System.getenv("FRONDTEST_KEEP_TMP") != null;
    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            synchronized (OPEN) {
                for (TestServer s : OPEN)
                    if (s.proc != null) {
                        s.proc.destroyForcibly();
                        try {
                            s.proc.waitFor(10, TimeUnit.SECONDS);
                        } catch (InterruptedException e) {
                            // the next server's wait still runs
                        }
                    }
            }
            synchronized (DIRS) {
                for (Path d : DIRS)
                    if (keep)
                        System.out.println("temp dir kept: " + d);
                    else
                        removeTree(d);
            }
        }));
    }

    /** A test failed: the temp dirs stay, to look into. */
    static void keepDirs() {
        keep = true;
    }

    /** d and everything under it, as far as it goes: at exit, best effort. */
    static void removeTree(Path d) {
        try (var all = Files.walk(d)) {
            all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | java.io.UncheckedIOException ignored) {
            // gone already, or not ours to remove
        }
    }

    final Path dir;
    final String store;
    final int port;
    private final List<String> args = new ArrayList<>();
    private Process proc;

    static String bin() {
        String b = System.getenv("FROND_BIN");
        if (b == null)
            throw new IllegalStateException("FROND_BIN is not set: the frond binary under test");
        return b;
    }

    static Path tempDir() throws IOException {
        Path d = Files.createTempDirectory("frond-java-");
        synchronized (DIRS) {
            DIRS.add(d);
        }
        return d;
    }

    /** A SQLite store with tags (name, step, name, step, ...). */
    static String newStore(Object... tags) throws Exception {
        String store = "sqlite://" + tempDir().resolve("frond.db");
        for (int i = 0; i < tags.length; i += 2) {
            Process p = new ProcessBuilder(bin(), "tag", "create", (String) tags[i], "--step",
                String.valueOf(tags[i + 1]), "--store", store).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0)
                throw new AssertionError("tag create: " + out);
        }
        return store;
    }

    /** A free loopback port below the kernel's ephemeral range. */
    static int freePort() throws IOException {
        int lo = 32768;
        try {
            // a stream: Files.readString trusts the size /proc gives (0)
            try (var in = Files.newInputStream(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))) {
                lo = Integer.parseInt(new String(in.readAllBytes()).trim().split("\\s+")[0]);
            }
        } catch (IOException | NumberFormatException ignored) {
            // the default range
        }
        int top = Math.min(lo, 32768) - 1, bottom = Math.max(1024, top - 12000);
        for (int i = 0; i < 200; i++) {
            int p = bottom + ThreadLocalRandom.current().nextInt(top - bottom + 1);
            try (ServerSocket s = new ServerSocket(p, 1,
                    java.net.InetAddress.getByName("127.0.0.1"))) {
                return s.getLocalPort();
            } catch (IOException busy) {
                // another
            }
        }
        throw new IOException("no free port below the ephemeral range");
    }

    TestServer(String store, String... extra) throws Exception {
        this.store = store;
        dir = tempDir();
        port = freePort();
        args.addAll(List.of(bin(), "serve", "--listen", "127.0.0.1:" + port,
            "--resp-listen", "off", "--store", store, "--data-dir", dir.toString(),
            "--threads", "1"));
        args.addAll(List.of(extra));
        synchronized (OPEN) {
            OPEN.add(this);
        }
        start();
    }

    String url() { return "http://127.0.0.1:" + port; }

    void start() throws Exception {
        ProcessBuilder pb = new ProcessBuilder(args).directory(dir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("server.log").toFile()));
        Map<String, String> env = pb.environment();
        env.remove("FROND_SERVERS");
        for (String v : new String[] {"ASAN_OPTIONS", "UBSAN_OPTIONS"}) {
            String o = env.getOrDefault(v, "");
            env.put(v, (o.isEmpty() ? "" : o + ":") + "log_path=" + dir.resolve("sanitizer"));
        }
        proc = pb.start();
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (System.nanoTime() < deadline) {
            if (!proc.isAlive())
                throw new AssertionError("frond serve exited at start: " + log());
            try {
                HttpURLConnection c = (HttpURLConnection) new URL(url() + "/readyz").openConnection();
                c.setConnectTimeout(1000);
                c.setReadTimeout(1000);
                if (c.getResponseCode() == 200)
                    return;
            } catch (IOException notYet) {
                // not listening yet
            }
            Thread.sleep(50);
        }
        throw new AssertionError("frond serve not ready after 30 s: " + log());
    }

    String log() throws IOException { return Files.readString(dir.resolve("server.log")); }

    void kill() throws Exception { signal(true); }

    void stop() throws Exception { signal(false); }

    private void signal(boolean kill) throws Exception {
        if (proc == null)
            return;
        if (kill)
            proc.destroyForcibly();
        else
            proc.destroy(); // SIGTERM: the server drains, LeakSanitizer runs
        if (!proc.waitFor(15, TimeUnit.SECONDS)) {
            proc.destroyForcibly().waitFor();
            throw new AssertionError("frond serve did not exit within 15 s");
        }
        proc = null;
        List<File> files = new ArrayList<>(List.of(dir.resolve("server.log").toFile()));
        File[] s = dir.toFile().listFiles((d, n) -> n.startsWith("sanitizer."));
        if (s != null)
            files.addAll(List.of(s));
        for (File f : files) {
            String text = Files.readString(f.toPath());
            for (String m : new String[] {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                    "runtime error:"})
                if (text.contains(m))
                    throw new AssertionError("sanitizer report from frond serve (" + f + "):\n"
                        + text.substring(text.indexOf(m)));
        }
    }

    @Override
    public void close() {
        try {
            stop();
        } catch (Exception e) {
            throw new AssertionError("stopping frond serve: " + e, e);
        } finally {
            synchronized (OPEN) {
                OPEN.remove(this);
            }
        }
    }
}
