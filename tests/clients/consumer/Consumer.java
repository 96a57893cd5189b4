// SPDX-License-Identifier: BSD-3-Clause
// The consumer program of tests/clients/consumer.sh (Java): IDs through each
// call, kill -9 of the first responder, failover figures, close().
import dev.flakewire.Client;
import dev.flakewire.ClosedException;
import dev.flakewire.Layout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;

public class Consumer {
    static void fail(String msg) {
        System.err.println("FAIL: " + msg);
        System.exit(1);
    }

    /** Milliseconds one get() takes from a client of servers (defaults). */
    static double timed(String... servers) throws Exception {
        try (Client c = new Client(List.of(servers), null)) {
            long t = System.nanoTime();
            c.get();
            return (System.nanoTime() - t) / 1e6;
        }
    }

    public static void main(String[] args) throws Exception {
        String a = System.getenv("FW_A"), b = System.getenv("FW_B");
        Client c = new Client(List.of(a, b), null);
        List<Long> ids = new ArrayList<>();
        ids.add(c.get());
        for (int i = 0; i < 1000; i++) ids.add(c.next());
        if (c.uuid7(5).size() != 5) fail("uuid7(5)");
        ProcessHandle.of(Long.parseLong(System.getenv("FW_A_PID"))).orElseThrow().destroyForcibly(); // SIGKILL
        double worst = 0;
        for (int i = 0; i < 3000; i++) {
            long t = System.nanoTime();
            ids.add(c.nextAsync().get());
            worst = Math.max(worst, (System.nanoTime() - t) / 1e6);
        }
        ids.add(c.get());
        Layout layout = c.layout();
        if (new HashSet<>(ids).size() != ids.size()) fail("duplicate IDs");
        Map<Integer, Long> last = new HashMap<>();
        for (long id : ids) {
            Layout.Parts p = layout.decode(id);
            int w = p.datacenter() << 16 | p.worker();
            if (id <= last.getOrDefault(w, 0L)) fail("ID " + id + " of worker " + p.worker() + " not above " + last.get(w));
            last.put(w, id);
        }
        if (last.size() != 2) fail("IDs from " + last.size() + " workers, want 2 (A then B)");
        c.close();
        try {
            c.next();
            fail("next() after close() succeeded");
        } catch (ClosedException e) {
            // expected
        }
        try {
            c.get();
            fail("get() after close() succeeded");
        } catch (ClosedException e) {
            // expected
        }
        System.out.printf("FAILOVER java dead_port_ms=%.1f silent_host_ms=%.1f after_kill9_worst_call_ms=%.1f%n",
                timed(System.getenv("FW_DEAD"), b), timed(System.getenv("FW_SILENT"), b), worst);
        System.out.println("OK java: " + ids.size() + " unique IDs increasing per worker, 5 UUIDv7, closed after close()");
    }
}
