// SPDX-License-Identifier: BSD-3-Clause
import dev.flakewire.Client;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * IDs/s through Client.next() from THREADS threads. usage: Bench SERVER THREADS SECONDS [tuned|defaults|baseline]
 * (prints "ids_per_s N"); tuned (the default): trusted, prefetch 4096, low water 1024; defaults: the library's;
 * baseline: no client, an in-process AtomicLong, the ceiling of any hand-out. Warm-up as JMH does it: 5 warm-up
 * iterations of 0.2 s with the same threads and calls (the JIT compiles next() and the loop), then the measured
 * iteration.
 */
public final class Bench {
    interface Next {
        long next() throws Exception;
    }

    static double run(Next next, int threads, double secs) throws InterruptedException {
        AtomicLong total = new AtomicLong();
        long t0 = System.nanoTime();
        long stop = t0 + (long) (secs * 1e9);
        List<Thread> ts = new ArrayList<>();
        for (int k = 0; k < threads; k++) {
            Thread t = new Thread(() -> {
                long n = 0;
                try {
                    while (System.nanoTime() < stop) {
                        for (int i = 0; i < 256; i++) next.next();
                        n += 256;
                    }
                } catch (Exception e) {
                    System.err.println("bench: " + e.getMessage());
                    System.exit(1);
                }
                total.addAndGet(n);
            });
            ts.add(t);
            t.start();
        }
        for (Thread t : ts) t.join();
        return total.get() / ((System.nanoTime() - t0) / 1e9);
    }

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[1]);
        double secs = Double.parseDouble(args[2]);
        String mode = args.length < 4 ? "tuned" : args[3];
        Client.Options o = new Client.Options();
        if (mode.equals("tuned")) {
            o.trusted = true;
            o.prefetch = 4096;
            o.lowWater = 1024;
        }
        try (Client c = new Client(List.of(args[0]), o)) {
            c.next();
            AtomicLong counter = new AtomicLong();
            Next next = mode.equals("baseline") ? counter::incrementAndGet : c::next;
            for (int i = 0; i < 5; i++) run(next, threads, 0.2);
            System.out.printf("ids_per_s %.0f%n", run(next, threads, secs));
        }
    }
}
