// SPDX-License-Identifier: Apache-2.0

import dev.frond.client.FrondClient;
import dev.frond.client.SegmentTag;
import dev.frond.client.Stats;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntToLongFunction;

/**
 * bench/clients/java: a leased tag's next() beside a bare
 * AtomicLong.incrementAndGet in the same run, on 1 and several threads,
 * with a warm-up, 15 rounds and medians of CPU time; and the server calls per million
 * IDs at a steady rate. Usage: java -cp JAR:. Bench URL [TAG]
 */
public final class Bench {
    static final int ROUNDS = 15, PER_RUN = 10_000_000;
    static final ThreadMXBean CPU = ManagementFactory.getThreadMXBean();
    static volatile long sink;
    static double lastWall; // wall-clock ns per call of the last run

    /** Makes PER_RUN calls split over threads, and returns the CPU time
     *  they used per call: on a machine shared with other work, time spent
     *  waiting for a core is not counted. */
    static double run(int threads, IntToLongFunction body) throws InterruptedException {
        Thread[] ts = new Thread[threads];
        AtomicLong cpu = new AtomicLong();
        long w0 = System.nanoTime();
        for (int i = 0; i < threads; i++) {
            ts[i] = new Thread(() -> {
                long t0 = CPU.getCurrentThreadCpuTime();
                sink += body.applyAsLong(PER_RUN / threads);
                cpu.addAndGet(CPU.getCurrentThreadCpuTime() - t0);
            });
            ts[i].start();
        }
        for (Thread t : ts)
            t.join();
        lastWall = (double) (System.nanoTime() - w0) / PER_RUN;
        return (double) cpu.get() / PER_RUN;
    }

    static long bare(AtomicLong x, int n) {
        long s = 0;
        for (int i = 0; i < n; i++)
            s += x.incrementAndGet();
        return s;
    }

    /** The least a range that can be swapped for the next one costs: the
     *  current range read from a volatile field, the atomic add on its
     *  counter and one comparison with its bound. */
    static final class Floor {
        final AtomicLong n = new AtomicLong();
        final long end = 1L << 62;
    }

    static final class Current {
        volatile Floor cur = new Floor();
    }

    static long bounded(Current c, int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            Floor f = c.cur;
            long v = f.n.incrementAndGet();
            if (v >= f.end)
                throw new IllegalStateException("the bound is 2^62");
            s += v;
        }
        return s;
    }

    /** The least a bounded range costs when, as in SegmentTag, the bound
     *  and the cursor are fields of one object: the bound loaded (acquire)
     *  before the add, one comparison. */
    static final class Fields {
        static final VarHandle END, N;

        static {
            try {
                MethodHandles.Lookup l = MethodHandles.lookup();
                END = l.findVarHandle(FieldsEnd.class, "end", long.class);
                N = l.findVarHandle(FieldsN.class, "n", long.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }
    }

    @SuppressWarnings("unused")
    static class FieldsPad0 { long p00, p01, p02, p03, p04, p05, p06, p07; }

    static class FieldsEnd extends FieldsPad0 { long end = 1L << 62; }

    @SuppressWarnings("unused")
    static class FieldsPad1 extends FieldsEnd { long p10, p11, p12, p13, p14, p15, p16, p17; }

    static class FieldsN extends FieldsPad1 { long n; }

    @SuppressWarnings("unused")
    static final class FieldsObj extends FieldsN { long p20, p21, p22, p23, p24, p25, p26, p27; }

    static long boundAdd(FieldsObj o, int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            long e = (long) Fields.END.getAcquire(o);
            long v = (long) Fields.N.getAndAdd(o, 1L) + 1;
            if (v > e)
                throw new IllegalStateException("the bound is 2^62");
            s += v;
        }
        return s;
    }

    /** A little work on each ID, the same in both loops below: a caller
     *  does something with its IDs. The xor and the multiply lengthen the
     *  loop around the locked add past what this CPU runs at the bare
     *  counter's speed (bench/clients/lockadd.c), so the two loops compare
     *  the counter and the tag in a loop of the shape a caller's has. */
    static final long MIX = 0x9E3779B97F4A7C15L;

    static long bareMixed(AtomicLong x, int n) {
        long s = 0;
        for (int i = 0; i < n; i++)
            s = (s ^ x.incrementAndGet()) * MIX;
        return s;
    }

    static long taggedMixed(SegmentTag t, int n) {
        long s = 0;
        for (int i = 0; i < n; i++)
            s = (s ^ t.next()) * MIX;
        return s;
    }

    static long tagged(SegmentTag t, int n) {
        long s = 0;
        for (int i = 0; i < n; i++)
            s += t.next();
        return s;
    }

    static final String HEADER = "| threads | AtomicLong.incrementAndGet | bound, add | pointer, add, bound | SegmentTag.next | ratio to the counter | ratio to bound, add |";
    static final String RULE = "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |";

    /** A table row of the medians of counter, bound-add, pointer-add-bound
     *  and the tag, and the ratios. */
    static String row(int threads, double[][] d) {
        double mb = median(d[0]), ma = median(d[1]), mf = median(d[2]), mn = median(d[3]);
        return String.format("| %d | %.2f | %.2f | %.2f | %.2f | %.2f× | %.2f× |", threads, mb,
            ma, mf, mn, mb / mn, ma / mn);
    }

    static double median(double[] d) {
        Arrays.sort(d);
        return d[d.length / 2];
    }

    public static void main(String[] args) throws Exception {
        try (FrondClient c = FrondClient.builder().servers(args[0]).build()) {
            SegmentTag t = c.tag(args.length > 1 ? args[1] : "bench");
            AtomicLong x = new AtomicLong();
            Current f = new Current();
            FieldsObj fo = new FieldsObj();
            for (int w = 0; w < 3; w++) { // warm-up: the JIT, and ranges at their largest
                run(1, n -> bare(x, n));
                run(1, n -> boundAdd(fo, n));
                run(1, n -> bounded(f, n));
                run(1, n -> tagged(t, n));
                run(1, n -> bareMixed(x, n));
                run(1, n -> taggedMixed(t, n));
            }
            System.out.printf("Java %s, %d rounds of %d IDs, medians of CPU ns per ID%n%n",
                System.getProperty("java.version"), ROUNDS, PER_RUN);
            System.out.println(HEADER);
            System.out.println(RULE);
            Stats before = c.stats();
            StringBuilder wall = new StringBuilder();
            for (int threads : new int[] {1, 2, 4}) {
                double[][] cpu = new double[4][ROUNDS], wall2 = new double[4][ROUNDS];
                for (int r = 0; r < ROUNDS; r++) {
                    cpu[0][r] = run(threads, n -> bare(x, n));
                    wall2[0][r] = lastWall;
                    cpu[1][r] = run(threads, n -> boundAdd(fo, n));
                    wall2[1][r] = lastWall;
                    cpu[2][r] = run(threads, n -> bounded(f, n));
                    wall2[2][r] = lastWall;
                    cpu[3][r] = run(threads, n -> tagged(t, n));
                    wall2[3][r] = lastWall;
                }
                System.out.println(row(threads, cpu));
                wall.append(row(threads, wall2)).append('\n');
            }
            System.out.printf("%nThe same rounds in wall-clock ns per ID (contention shows here,"
                + " and so does other work on the machine):%n%n");
            System.out.println(HEADER);
            System.out.println(RULE);
            System.out.print(wall);
            double[] mb = new double[ROUNDS], mn = new double[ROUNDS];
            for (int r = 0; r < ROUNDS; r++) {
                mb[r] = run(1, n -> bareMixed(x, n));
                mn[r] = run(1, n -> taggedMixed(t, n));
            }
            System.out.printf("%nOne thread, the same work on each ID in both loops (an xor and"
                + " a multiply), CPU ns per ID:%n%n");
            System.out.println("| threads | AtomicLong.incrementAndGet, work | SegmentTag.next, work | ratio to the counter |");
            System.out.println("| ---: | ---: | ---: | ---: |");
            System.out.printf("| 1 | %.2f | %.2f | %.2f× |%n", median(mb), median(mn),
                median(mb) / median(mn));
            Stats after = c.stats();
            long ids = after.leased() - before.leased(), calls = after.calls() - before.calls();
            System.out.printf("%nsteady rate: %d range calls for %d IDs leased: %.2f calls per million IDs%n",
                calls, ids, calls * 1e6 / ids);
        }
    }
}
