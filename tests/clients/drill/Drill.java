// SPDX-License-Identifier: BSD-3-Clause
import dev.flakewire.Client;
import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.util.Arrays;

/**
 * The Java caller of scripts/drill.sh (issue 49): one Client (the public API) shared by two threads, one calling
 * next() and one get() (one round trip), each at a fixed rate for a bounded time, one line per call on stdout:
 * {@code WALL_S MODE LATENCY_US ok|err [MESSAGE]}. WALL_S is the call's start (Unix seconds, 6 decimals). A call
 * late on its slot does not make up the missed ones. usage: Drill SERVERS RATE SECONDS TIMEOUT_MS (0: the
 * client's default)
 */
public final class Drill {
    interface Call {
        long call() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: Drill SERVERS RATE SECONDS TIMEOUT_MS");
            System.exit(2);
        }
        double rate = Double.parseDouble(args[1]), secs = Double.parseDouble(args[2]);
        int tmo = Integer.parseInt(args[3]);
        if (rate < 1 || rate > 10000 || secs < 1 || secs > 600 || tmo < 0) {
            System.err.println("Drill: bad arguments");
            System.exit(2);
        }
        Client.Options o = new Client.Options();
        if (tmo > 0) o.timeout(java.time.Duration.ofMillis(tmo));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out), 1 << 16);
        try (Client c = new Client(Arrays.asList(args[0].split(",")), o)) {
            Thread[] ts = {
                new Thread(() -> run(out, "next", c::next, rate, secs)),
                new Thread(() -> run(out, "get", c::get, rate, secs)),
            };
            for (Thread t : ts) t.start();
            for (Thread t : ts) t.join();
            out.flush();
        }
    }

    static void run(BufferedWriter out, String name, Call call, double rate, double secs) {
        long period = (long) (1e9 / rate), start = System.nanoTime(), slot = start;
        long maxCalls = (long) (rate * secs) + 1;
        for (long i = 0; i < maxCalls && System.nanoTime() - start < (long) (secs * 1e9); i++) {
            long d = slot - System.nanoTime();
            if (d > 0) {
                try {
                    Thread.sleep(d / 1_000_000, (int) (d % 1_000_000));
                } catch (InterruptedException e) {
                    return;
                }
            }
            java.time.Instant now = java.time.Instant.now();
            double w = now.getEpochSecond() + now.getNano() / 1e9;
            long t0 = System.nanoTime();
            String res;
            try {
                call.call();
                res = "ok";
            } catch (Exception e) {
                String m = e.getMessage();
                res = "err " + (m == null ? e.getClass().getSimpleName() : m.replace('\n', ' '));
            }
            long lat = (System.nanoTime() - t0) / 1000;
            String line = String.format(java.util.Locale.ROOT, "%.6f %s %d %s%n", w, name, lat, res);
            synchronized (out) {
                try {
                    out.write(line);
                } catch (java.io.IOException e) {
                    return;
                }
            }
            slot += period;
            long n = System.nanoTime();
            if (slot < n) slot = n;
        }
    }
}
