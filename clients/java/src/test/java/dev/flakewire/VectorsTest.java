// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.StringJoiner;
import org.junit.jupiter.api.Test;

/** Conformance: tests/vectors/wire.vec, the same file every client checks. */
class VectorsTest {
    private static final HexFormat HEX = HexFormat.of();

    static List<Map<String, String>> load(String kind) throws IOException {
        String env = System.getenv("FW_VECTORS");
        Path p = Path.of(env != null ? env : "../../tests/vectors/wire.vec");
        List<Map<String, String>> out = new ArrayList<>();
        for (String line : Files.readAllLines(p)) {
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] toks = line.split(" ");
            if (!toks[0].equals(kind)) continue;
            Map<String, String> kv = new HashMap<>();
            for (int i = 1; i < toks.length; i++) {
                int eq = toks[i].indexOf('=');
                kv.put(toks[i].substring(0, eq), toks[i].substring(eq + 1));
            }
            out.add(kv);
        }
        return out;
    }

    @Test
    void fileCoversEverything() throws IOException {
        List<Map<String, String>> reps = load("rep");
        assertTrue(load("req").size() >= 40 && reps.size() >= 100 && load("dec").size() >= 5
                && load("uuid").size() >= 8);
        Set<String> results = new HashSet<>();
        for (Map<String, String> r : reps) results.add(r.get("result"));
        assertEquals(Set.of("ok", "short", "magic", "version", "bad"), results);
    }

    @Test
    void requestsByteForByte() throws IOException {
        for (Map<String, String> v : load("req")) {
            byte[] got = Wire.encodeRequest(Integer.parseInt(v.get("op")), Integer.parseInt(v.get("count")),
                    Long.parseUnsignedLong(v.get("tag"), 16), v.get("pad").equals("1"), Integer.parseInt(v.get("seq")));
            assertEquals(v.get("bytes"), HEX.formatHex(got), v.get("name"));
        }
    }

    @Test
    void repliesAcceptedAndRejectedAlike() throws IOException {
        for (Map<String, String> v : load("rep")) {
            String name = v.get("name");
            byte[] b = HEX.parseHex(v.get("bytes"));
            Wire.Reply r;
            try {
                r = Wire.parseReply(b, b.length);
            } catch (Wire.WireException e) {
                assertEquals(v.get("result"), e.reason, name);
                if (e.reason.equals("version")) assertEquals(v.get("tag"), String.format("%016x", e.tag), name);
                continue;
            }
            if (!v.get("result").equals("ok")) fail(name + ": accepted, want " + v.get("result"));
            assertEquals(String.join(" ", v.get("op"), v.get("status"), v.get("flags"), v.get("count"), v.get("tag"),
                    v.get("dc"), v.get("worker"), v.get("retry_us")),
                    r.op() + " " + r.status() + " " + r.flags() + " " + r.count() + " " + String.format("%016x", r.tag())
                            + " " + r.datacenter() + " " + r.worker() + " " + r.retryAfterUs(), name);
            if (v.containsKey("ids")) {
                StringJoiner j = new StringJoiner(",");
                for (long id : r.ids()) j.add(Long.toUnsignedString(id));
                assertEquals(v.get("ids"), j.toString(), name);
            }
            if (v.containsKey("ranges")) {
                StringJoiner j = new StringJoiner(",");
                for (Wire.Range x : r.ranges()) j.add(Long.toUnsignedString(x.first()) + ":" + x.n());
                assertEquals(v.get("ranges"), j.toString(), name);
            }
            if (v.containsKey("info")) {
                Wire.Info i = r.info();
                assertEquals(v.get("info"), String.join(":", Long.toUnsignedString(i.epochMs()), "" + i.timeBits(),
                        "" + i.dcBits(), "" + i.workerBits(), "" + i.seqBits(), "" + i.versionMin(), "" + i.versionMax(),
                        "" + i.listMax(), "" + i.rangesMax(), "" + i.maxBorrowMs(), Integer.toUnsignedString(i.features()),
                        "" + i.clockOffsetNs()), name);
            }
            if (v.containsKey("uuids")) {
                StringJoiner j = new StringJoiner(",");
                for (byte[] u : r.uuids()) j.add(HEX.formatHex(u));
                assertEquals(v.get("uuids"), j.toString(), name);
            }
        }
    }

    @Test
    void decode() throws IOException {
        for (Map<String, String> v : load("dec")) {
            String[] bits = v.get("bits").split(":");
            Layout l = new Layout(Long.parseLong(v.get("epoch")), Integer.parseInt(bits[0]), Integer.parseInt(bits[1]),
                    Integer.parseInt(bits[2]), Integer.parseInt(bits[3]));
            l.validate();
            Layout.Parts p = l.decode(Long.parseLong(v.get("id")));
            assertEquals(String.join(" ", v.get("ms"), v.get("unix_ms"), v.get("dc"), v.get("worker"), v.get("seq")),
                    p.ms() + " " + p.unixMs() + " " + p.datacenter() + " " + p.worker() + " " + p.sequence(), v.get("id"));
        }
    }

    @Test
    void uuid() throws IOException {
        for (Map<String, String> v : load("uuid")) {
            String[] bits = v.get("bits").split(":");
            Layout l = new Layout(Long.parseLong(v.get("epoch")), Integer.parseInt(bits[0]), Integer.parseInt(bits[1]),
                    Integer.parseInt(bits[2]), Integer.parseInt(bits[3]));
            java.util.UUID u = java.util.UUID.fromString(v.get("text"));
            assertEquals(v.get("text"), u.toString());
            Layout.UuidParts p = l.readUuid(u);
            assertEquals(String.join(" ", v.get("ver"), v.get("var"), v.get("v7"), v.get("unix_ms"), v.get("flakewire"),
                    v.get("counter"), v.get("dc"), v.get("worker")),
                    p.version() + " " + p.variant() + " " + (p.isV7() ? 1 : 0) + " " + p.unixMs() + " "
                            + (p.flakewire() ? 1 : 0) + " " + p.counter() + " " + p.datacenter() + " " + p.worker(),
                    v.get("text"));
        }
    }
}
