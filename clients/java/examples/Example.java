// SPDX-License-Identifier: BSD-3-Clause
import dev.flakewire.Client;
import dev.flakewire.Layout;
import java.io.IOException;
import java.util.List;

/** Prints a few IDs from flakewire responders and takes the first apart. usage: Example [SERVER...] */
public final class Example {
    public static void main(String[] args) {
        List<String> servers = args.length > 0 ? List.of(args) : List.of("127.0.0.1:4242");
        try (Client c = new Client(servers, null)) {
            long first = c.next();
            System.out.println(first);
            for (int i = 0; i < 4; i++) System.out.println(c.next());
            Layout l = c.layout() != null ? c.layout() : Layout.DEFAULT;
            Layout.Parts p = l.decode(first);
            System.out.printf("first: unix_ms %d datacenter %d worker %d sequence %d%n", p.unixMs(), p.datacenter(),
                    p.worker(), p.sequence());
        } catch (IOException | IllegalArgumentException e) {
            System.err.println("example: " + e.getMessage());
            System.exit(1);
        }
    }
}
