// SPDX-License-Identifier: BSD-3-Clause
import dev.flakewire.Client;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * IDs/s through Client.next() from THREADS threads. usage: Bench SERVER THREADS SECONDS [tuned|defaults] (prints
 * "ids_per_s N"); tuned (the default): trusted, prefetch 4096, low water 1024; defaults: the library's.
 */
public final class Bench {
    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[1]);
        long stop = System.nanoTime() + (long) (Double.parseDouble(args[2]) * 1e9);
        Client.Options o = new Client.Options();
        if (args.length < 4 || args[3].equals("tuned")) {
            o.trusted = true;
            o.prefetch = 4096;
            o.lowWater = 1024;
        }
        try (Client c = new Client(List.of(args[0]), o)) {
            c.next();
            AtomicLong total = new AtomicLong();
            long t0 = System.nanoTime();
            List<Thread> ts = new ArrayList<>();
            for (int k = 0; k < threads; k++) {
                Thread t = new Thread(() -> {
                    long n = 0;
                    try {
                        while (System.nanoTime() < stop) {
                            for (int i = 0; i < 256; i++) c.next();
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
            System.out.printf("ids_per_s %.0f%n", total.get() / ((System.nanoTime() - t0) / 1e9));
        }
    }
}
