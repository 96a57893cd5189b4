#!/usr/bin/python3
"""Loads and measures primary-key kinds in PostgreSQL and MariaDB for
scripts/bench/keys.sh, which starts the servers and flakesock and passes
their addresses; this file never starts or stops a server.

Writes OUT/keys.json, OUT/keys.txt (the table, also printed) and the gnuplot
PNGs OUT/keys-insert-rate.png and OUT/keys-index-size.png.
Needs Debian's python3-psycopg2 and python3-mysqldb (run with /usr/bin/python3).
"""
import argparse
import datetime
import json
import os
import platform
import random
import re
import socket
import struct
import subprocess
import sys
import time
import uuid

KINDS = ["snowflake", "sequence", "uuidv4", "uuidv7", "uuidv4text"]
# The layout flakesock is started with (the default): 41/0/10/12, epoch 2026-01-01.
FW_EPOCH_MS = 1767225600000
FW_TIME_SHIFT = 22
CHECKPOINTS = 10  # PostgreSQL CHECKPOINT after every tenth of the rows
RATE_POINTS = 50  # points per insert-rate curve
SCAN_FRACTION = 0.01  # a time-range scan covers the time of 1 % of the batches
PAYLOAD_DESC = "created_at (DB clock at insert), n BIGINT (row number), payload 32-char text"
KEY_DESC = {
    "snowflake": ("flakewire Snowflake ID (flakectl get --range --csv, live per batch)", 8),
    "sequence": ("database sequence (PG identity / InnoDB AUTO_INCREMENT)", 8),
    "uuidv4": ("random UUIDv4, native type", 16),
    "uuidv7": ("UUIDv7, native type", 16),
    "uuidv4text": ("random UUIDv4 as 36-char text", 36),
}


def die(msg):
    print(f"bench-keys: {msg}", file=sys.stderr)
    sys.exit(1)


def pct(sorted_vals, p):
    if not sorted_vals:
        return None
    k = min(len(sorted_vals) - 1, max(0, int(round(p / 100.0 * (len(sorted_vals) - 1)))))
    return sorted_vals[k]


# ---------------------------------------------------------------- keys

class Uuid7Gen:
    """RFC 9562 UUIDv7 (section 5.7): 48-bit Unix ms, version 7, 12 bits of
    sub-millisecond time in rand_a (section 6.2, method 3), variant 0b10 and
    62 random bits in rand_b; monotonic within this process (section 6.2):
    a timestamp not above the last one is replaced by the last one + 1."""

    def __init__(self):
        self.last = 0

    def batch(self, n):
        rnd = os.urandom(8 * n)
        out = []
        for i in range(n):
            ns = time.time_ns()
            t = ((ns // 1000000) << 12) | ((ns % 1000000) * 4096 // 1000000)
            if t <= self.last:
                t = self.last + 1
            self.last = t
            b = int.from_bytes(rnd[8 * i:8 * i + 8], "big") & ((1 << 62) - 1)
            v = ((t >> 12) << 80) | (0x7 << 76) | ((t & 0xFFF) << 64) | (0b10 << 62) | b
            out.append(str(uuid.UUID(int=v)))
        return out


def uuid4_batch(n):
    rnd = os.urandom(16 * n)
    return [str(uuid.UUID(bytes=rnd[16 * i:16 * i + 16], version=4)) for i in range(n)]


def fw_info_features(server):
    """INFO request (PROTOCOL.md): returns the u32 at datagram offset 44
    (features; bit 0 = UUID7), or raises on no/invalid answer."""
    host, port = server.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    tag = random.getrandbits(64)
    req = struct.pack(">HBBBBHQHHI", 0x464B, 1, 4, 0, 0, 1, tag, 0, 0, 0) + bytes(32)
    try:
        for _ in range(3):
            s.sendto(req, (host, int(port)))
            try:
                data, _ = s.recvfrom(2048)
            except socket.timeout:
                continue
            magic, _, op, status = struct.unpack(">HBBB", data[:5])
            rtag = struct.unpack(">Q", data[8:16])[0]
            if magic == 0x464B and op == 0x84 and status == 0 and rtag == tag and len(data) >= 56:
                return struct.unpack(">I", data[44:48])[0]
        raise RuntimeError("no INFO reply")
    finally:
        s.close()


class KeySource:
    def __init__(self, args):
        self.flakectl = args.flakectl
        self.server = args.server
        self.uuid7 = Uuid7Gen()
        self.fetch_s = 0.0
        self.fetch_retries = 0
        feats = fw_info_features(self.server)
        self.uuid7_from_flakewire = bool(feats & 0x1)
        if self.uuid7_from_flakewire:
            self.uuid7_source = ("flakewire UUID7 op (responder advertises INFO features bit 0; "
                                 "flakectl get --uuid7)")
        else:
            self.uuid7_source = ("RFC 9562 generator in scripts/bench/keys.py (the responder "
                                 f"does not advertise UUID7: INFO features = {feats:#x})")

    def _flakectl(self, extra):
        """Runs flakectl get; a failed call (RETRY_AFTER while the responder
        extends its mark on a busy machine, a lost datagram) is retried like a
        service would, up to 10 times. Partial output of a failed call is
        dropped: those IDs are spent, never reused."""
        for attempt in range(10):
            t0 = time.perf_counter()
            r = subprocess.run([self.flakectl, "get", "--server", self.server] + extra,
                               capture_output=True, text=True, timeout=30)
            self.fetch_s += time.perf_counter() - t0
            if r.returncode == 0:
                return r.stdout
            self.fetch_retries += 1
            time.sleep(0.05 * (attempt + 1))
        die(f"flakectl get {' '.join(extra)} failed 10 times ({r.returncode}): {r.stderr.strip()}")

    def snowflake(self, n):
        ids = []
        for line in self._flakectl(["--range", "--csv", "-n", str(n)]).splitlines():
            first, cnt = line.split(",")[:2]
            first, cnt = int(first), int(cnt)
            ids.extend(range(first, first + cnt))
        if len(ids) != n:
            die(f"flakectl get --range --csv -n {n} gave {len(ids)} IDs")
        return ids

    def uuidv7(self, n):
        if not self.uuid7_from_flakewire:
            return self.uuid7.batch(n)
        out = []
        for line in self._flakectl(["--uuid7", "-n", str(n)]).splitlines():
            m = re.search(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?7[0-9a-fA-F]{3}-?[89abAB][0-9a-fA-F]{3}-?"
                          r"[0-9a-fA-F]{12}", line)
            if m:
                out.append(str(uuid.UUID(m.group(0))))
        if len(out) != n:
            die(f"flakectl get --uuid7 -n {n} gave {len(out)} UUIDv7")
        return out

    @staticmethod
    def supplies(db, kind):
        """Whether the client supplies the keys (else the database makes them)."""
        return kind in ("snowflake", "uuidv7") or (db == "mariadb" and kind in ("uuidv4", "uuidv4text"))

    def client_keys(self, db, kind, n):
        """Keys the client supplies, or None where the database makes them."""
        if kind == "snowflake":
            return self.snowflake(n)
        if kind == "uuidv7":
            return self.uuidv7(n)
        if db == "mariadb" and kind in ("uuidv4", "uuidv4text"):
            # MariaDB 10.11's UUID() is version 1 (time-based): random v4 here.
            return uuid4_batch(n)
        return None


def payload(n):
    return "%032x" % ((n * 0x9E3779B97F4A7C15) & ((1 << 128) - 1))


# ---------------------------------------------------------------- load loop

def rate_curve(batches, rows_total):
    """batches: list of (rows, seconds). Returns [(rows inserted, rows/s)] in
    RATE_POINTS buckets, and the rates over the first and last tenth."""
    per = max(1, len(batches) // RATE_POINTS)
    curve, done = [], 0
    for i in range(0, len(batches), per):
        chunk = batches[i:i + per]
        rows = sum(r for r, _ in chunk)
        secs = sum(s for _, s in chunk)
        done += rows
        curve.append((done, rows / secs if secs > 0 else 0.0))
    tenth = max(1, len(batches) // 10)

    def rate(ch):
        s = sum(x for _, x in ch)
        return sum(r for r, _ in ch) / s if s > 0 else 0.0
    return curve, rate(batches[:tenth]), rate(batches[-tenth:]), rate(batches)


def load_interleaved(kinds, args, keys, db, st, between_rounds=None):
    """Loads every kind in CHECKPOINTS rounds; in each round every kind gets
    its next tenth of the rows, in an order that rotates from round to round,
    so load from the rest of the machine falls on all kinds alike. st[kind]
    holds insert(first, n, keys), counters() -> dict (read before and after
    each slice; the differences add up in st[kind]['delta']) and optionally
    end_slice(). between_rounds() runs between rounds."""
    nb = (args.rows + args.batch - 1) // args.batch
    per = (nb + CHECKPOINTS - 1) // CHECKPOINTS
    for s in st.values():
        s["batches"], s["batch_t"], s["delta"], s["load_s"] = [], [], {}, 0.0
    for rnd in range((nb + per - 1) // per):
        order = kinds[rnd % len(kinds):] + kinds[:rnd % len(kinds)]
        for kind in order:
            s = st[kind]
            c0 = s["counters"]()
            t_slice = time.perf_counter()
            for b in range(rnd * per, min(nb, (rnd + 1) * per)):
                n = min(args.batch, args.rows - b * args.batch)
                s["batch_t"].append(time.time())  # before the keys are made
                ks = keys.client_keys(db, kind, n)
                t0 = time.perf_counter()
                s["insert"](b * args.batch, n, ks)
                s["batches"].append((n, time.perf_counter() - t0))
            if "end_slice" in s:
                s["end_slice"]()
            s["load_s"] += time.perf_counter() - t_slice
            c1 = s["counters"]()
            for k, v in c1.items():
                s["delta"][k] = s["delta"].get(k, 0) + v - c0.get(k, 0)
        done = min(nb, (rnd + 1) * per) * args.batch
        print(f"bench-keys: {db}: {min(done, args.rows):,} rows per kind", file=sys.stderr)
        if between_rounds and (rnd + 1) * per < nb:
            between_rounds()


def time_lookups(c, sql, sample, what):
    """Times one point lookup per key of @sample (@sql with one parameter); each must find
    exactly one row. Returns latency_summary in microseconds."""
    lat = []
    for k in sample:
        t0 = time.perf_counter()
        c.execute(sql, (k,))
        got = c.fetchall()
        lat.append(time.perf_counter() - t0)
        if len(got) != 1:
            die(f"{what}: lookup of {k} found {len(got)} rows")
    return latency_summary(lat, 1e6)


def time_scans(c, q, kind, batch_t, scans):
    """Times @scans time-range scans (@q: count, sum over a window of 15 batches' times, by
    key for time-ordered kinds, else by created_at). Returns (latency_summary in ms, the
    average rows a scan saw)."""
    lat, rows_seen = [], []
    for wa, wb in time_windows(batch_t, scans, 15):
        p = key_bounds(kind, wa, wb) if kind in ("snowflake", "uuidv7") else (wa, wb)
        t0 = time.perf_counter()
        c.execute(q, p)
        rows_seen.append(int(c.fetchone()[0]))
        lat.append(time.perf_counter() - t0)
    return latency_summary(lat, 1e3), (sum(rows_seen) / len(rows_seen) if rows_seen else 0)


def time_windows(batch_t, count, seed):
    """Time windows of 1 % of the batches each, from the time before the keys
    of batch i were made to the time before those of batch i + w: the rows of
    batches i to i + w - 1 by created_at and, for time-ordered keys, by key."""
    rng = random.Random(seed)
    w = max(1, int(len(batch_t) * SCAN_FRACTION))
    ends = batch_t + [time.time()]
    out = []
    for _ in range(count):
        i = rng.randrange(0, max(1, len(batch_t) - w + 1))
        out.append((ends[i], ends[min(i + w, len(batch_t))]))
    return out


def key_bounds(kind, a, b):
    """The keys made in [a, b) (Unix seconds): whole milliseconds."""
    lo_ms, hi_ms = int(a * 1000), int(b * 1000)
    if kind == "snowflake":
        return (lo_ms - FW_EPOCH_MS) << FW_TIME_SHIFT, ((hi_ms - FW_EPOCH_MS) << FW_TIME_SHIFT) - 1
    return str(uuid.UUID(int=lo_ms << 80)), str(uuid.UUID(int=(hi_ms << 80) - 1))


def latency_summary(vals, scale):
    v = sorted(x * scale for x in vals)
    return {"n": len(v), "p50": pct(v, 50), "p95": pct(v, 95), "p99": pct(v, 99),
            "max": v[-1] if v else None}


# ---------------------------------------------------------------- PostgreSQL

PG_DDL = {
    "snowflake": "id bigint PRIMARY KEY",
    "sequence": "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    "uuidv4": "id uuid PRIMARY KEY DEFAULT gen_random_uuid()",
    "uuidv7": "id uuid PRIMARY KEY",
    "uuidv4text": "id text PRIMARY KEY DEFAULT gen_random_uuid()::text",
}


def pg_run(args, keys, kinds):
    import psycopg2
    adm = psycopg2.connect(args.pg)
    adm.autocommit = True
    a = adm.cursor()
    a.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
    a.execute("SELECT version()")
    res = {"server_version": a.fetchone()[0], "kinds": {}}
    st = {}
    for kind in kinds:
        t = f"k_{kind}"
        a.execute(f"DROP TABLE IF EXISTS {t}")
        a.execute(f"CREATE TABLE {t} ({PG_DDL[kind]}, created_at timestamptz NOT NULL DEFAULT now(), "
                  "n bigint NOT NULL, payload text NOT NULL)")
        conn = psycopg2.connect(args.pg)
        st[kind] = {"t": t, "kind": kind, "conn": conn, "c": conn.cursor()}

    def pg_insert(s):
        # INSERT ... SELECT FROM unnest(): one statement per batch, and the
        # same heap path (one WAL record per row) for every kind. COPY would
        # batch heap records only where no volatile default (gen_random_uuid)
        # is involved, which would favour some kinds for a reason that is not
        # the key.
        typ = {"snowflake": "bigint", "uuidv7": "uuid"}.get(s["kind"])
        if typ:
            q = (f"INSERT INTO {s['t']} (id, n, payload) "
                 f"SELECT * FROM unnest(%s::{typ}[], %s::bigint[], %s::text[])")
        else:
            q = f"INSERT INTO {s['t']} (n, payload) SELECT * FROM unnest(%s::bigint[], %s::text[])"

        def insert(first, n, ks):
            ns = list(range(first, first + n))
            pl = [payload(i) for i in ns]
            s["c"].execute(q, (ks, ns, pl) if ks is not None else (ns, pl))
            s["conn"].commit()
        return insert

    def pg_counters(s):
        def counters():
            # Flush the loading backend's statistics (before it reports
            # ready), then read them from the other connection.
            s["c"].execute("SELECT pg_stat_force_next_flush()")
            s["conn"].commit()
            a.execute("SELECT wal_fpi, wal_records, pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0') "
                      "FROM pg_stat_wal")
            fpi, recs, lsn = a.fetchone()
            return {"wal_fpi": int(fpi), "wal_records": int(recs), "wal_bytes": int(lsn)}
        return counters

    for s in st.values():
        s["insert"], s["counters"] = pg_insert(s), pg_counters(s)
    a.execute("CHECKPOINT")
    print(f"bench-keys: pg: loading {args.rows:,} rows into each of {', '.join(kinds)}", file=sys.stderr)
    load_interleaved(kinds, args, keys, "pg", st, between_rounds=lambda: a.execute("CHECKPOINT"))
    for kind in kinds:
        s = st[kind]
        t, conn, c = s["t"], s["conn"], s["c"]
        batches, d = s["batches"], s["delta"]
        a.execute("SELECT idx_blks_read, idx_blks_hit FROM pg_statio_user_indexes WHERE indexrelname = %s",
                  (f"{t}_pkey",))
        ir, ih = a.fetchone()
        a.execute("SELECT heap_blks_read, heap_blks_hit FROM pg_statio_user_tables WHERE relname = %s", (t,))
        hr, hh = a.fetchone()
        a.execute(f"SELECT count(*), count(DISTINCT id) FROM {t}")
        nrows, ndistinct = a.fetchone()
        a.execute(f"SELECT pg_relation_size('{t}_pkey'), pg_relation_size('{t}'), "
                  f"pg_total_relation_size('{t}')")
        isz, tsz, totsz = a.fetchone()
        a.execute(f"SELECT tree_level, leaf_pages, internal_pages, empty_pages, deleted_pages, "
                  f"avg_leaf_density, leaf_fragmentation FROM pgstatindex('{t}_pkey')")
        lvl, leaf, internal, empty, deleted, dens, frag = a.fetchone()
        a.execute(f"ANALYZE {t}")
        curve, r_first, r_last, r_all = rate_curve(batches, args.rows)
        r = {
            "rows": nrows, "distinct_keys": ndistinct, "load_s": s["load_s"],
            "insert_rate": r_all, "insert_rate_first10": r_first, "insert_rate_last10": r_last,
            "rate_curve": curve,
            "index_bytes": isz, "table_bytes": tsz, "total_bytes": totsz,
            "tree_level": lvl, "leaf_pages": leaf, "internal_pages": internal,
            "avg_leaf_density": float(dens), "leaf_fragmentation": float(frag),
            "wal_bytes": d["wal_bytes"], "wal_fpi": d["wal_fpi"], "wal_records": d["wal_records"],
            "idx_blks_read": ir, "idx_blks_hit": ih,
            "idx_hit_ratio": ih / (ih + ir) if ih + ir else None,
            "heap_blks_read": hr, "heap_blks_hit": hh,
        }
        # Point lookups by key, in random order.
        a.execute(f"SELECT id FROM {t} ORDER BY random() LIMIT %s", (args.lookups,))
        sample = [x[0] for x in a.fetchall()]
        typ = {"snowflake": "bigint", "sequence": "bigint", "uuidv4text": "text"}.get(kind, "uuid")
        c.execute(f"PREPARE look AS SELECT n, payload FROM {t} WHERE id = $1::{typ}")
        r["lookup_us"] = time_lookups(c, "EXECUTE look(%s)", sample, f"pg {kind}")
        conn.commit()
        # Time-range scans: by key where the key holds the time, else by
        # created_at through an index built now (not counted in the sizes).
        if kind in ("snowflake", "uuidv7"):
            r["scan_path"] = "primary key range"
            q = f"SELECT count(*), sum(n) FROM {t} WHERE id BETWEEN %s::{typ} AND %s::{typ}"
        else:
            t0 = time.perf_counter()
            a.execute(f"CREATE INDEX {t}_created ON {t} (created_at)")
            a.execute(f"ANALYZE {t}")
            r["created_index_s"] = time.perf_counter() - t0
            r["scan_path"] = "created_at index (built after the load)"
            q = f"SELECT count(*), sum(n) FROM {t} WHERE created_at BETWEEN to_timestamp(%s) AND to_timestamp(%s)"
        r["scan_ms"], r["scan_rows_avg"] = time_scans(c, q, kind, s["batch_t"], args.scans)
        conn.commit()
        conn.close()
        res["kinds"][kind] = r
        print(f"bench-keys: pg {kind}: {r_all:,.0f} rows/s, index {isz / 1048576:.1f} MB, "
              f"leaf density {float(dens):.1f} %, FPI {r['wal_fpi']}", file=sys.stderr)
    adm.close()
    return res


# ---------------------------------------------------------------- MariaDB

MY_DDL = {
    "snowflake": "id BIGINT NOT NULL PRIMARY KEY",
    "sequence": "id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY",
    "uuidv4": "id UUID NOT NULL PRIMARY KEY",
    "uuidv7": "id UUID NOT NULL PRIMARY KEY",
    "uuidv4text": "id CHAR(36) NOT NULL PRIMARY KEY",
}
MY_STATUS = ["Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads", "Innodb_os_log_written",
             "Innodb_data_written", "Innodb_pages_written", "Innodb_dblwr_pages_written"]


def my_counters(cur):
    cur.execute("SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE SUBSYSTEM = 'index'")
    out = {k: int(v) for k, v in cur.fetchall()}
    cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN (%s)" % ",".join(["%s"] * len(MY_STATUS)),
                MY_STATUS)
    out.update({k: int(v) for k, v in cur.fetchall()})
    return out


def my_run(args, keys, kinds):
    import MySQLdb
    conn = MySQLdb.connect(unix_socket=args.mariadb, user="root")
    c = conn.cursor()
    c.execute("SELECT VERSION(), @@innodb_buffer_pool_size, @@innodb_page_size")
    ver, bp, page = c.fetchone()
    res = {"server_version": ver, "innodb_buffer_pool_size": int(bp), "innodb_page_size": int(page),
           "kinds": {}}
    c.execute("CREATE DATABASE IF NOT EXISTS keys_bench")
    c.execute("USE keys_bench")
    c.execute("SET time_zone = '+00:00'")
    conn.commit()
    st = {}
    for kind in kinds:
        t = f"k_{kind}"
        c.execute(f"DROP TABLE IF EXISTS {t}")
        c.execute(f"CREATE TABLE {t} ({MY_DDL[kind]}, created_at TIMESTAMP(6) NOT NULL "
                  "DEFAULT CURRENT_TIMESTAMP(6), n BIGINT NOT NULL, payload VARCHAR(64) NOT NULL) ENGINE=InnoDB")
        conn.commit()
        st[kind] = {"t": t, "client": keys.supplies("mariadb", kind)}

    def my_insert(s):
        t = s["t"]

        def insert(first, n, ks):
            if s["client"]:
                c.executemany(f"INSERT INTO {t} (id, n, payload) VALUES (%s, %s, %s)",
                              [(ks[i], first + i, payload(first + i)) for i in range(n)])
            else:
                c.executemany(f"INSERT INTO {t} (n, payload) VALUES (%s, %s)",
                              [(first + i, payload(first + i)) for i in range(n)])
            conn.commit()
        return insert

    def my_end_slice(s):
        # Write this table's dirty pages now (not timed), so that the page
        # writes of one kind are not counted in the next kind's slice.
        def end_slice():
            c.execute(f"FLUSH TABLES {s['t']} FOR EXPORT")
            c.execute("UNLOCK TABLES")
        return end_slice

    for s in st.values():
        s["insert"], s["counters"], s["end_slice"] = my_insert(s), (lambda: my_counters(c)), my_end_slice(s)
    print(f"bench-keys: mariadb: loading {args.rows:,} rows into each of {', '.join(kinds)}", file=sys.stderr)
    load_interleaved(kinds, args, keys, "mariadb", st)
    for kind in kinds:
        s = st[kind]
        t, batches, d = s["t"], s["batches"], s["delta"]
        c.execute(f"ANALYZE TABLE {t}")
        c.fetchall()
        c.execute(f"SELECT count(*), count(DISTINCT id) FROM {t}")
        nrows, ndistinct = c.fetchone()
        c.execute("SELECT data_length, index_length FROM information_schema.TABLES "
                  "WHERE table_schema = 'keys_bench' AND table_name = %s", (t,))
        dlen, ilen = c.fetchone()
        c.execute("SELECT stat_name, stat_value FROM mysql.innodb_index_stats WHERE database_name = "
                  "'keys_bench' AND table_name = %s AND index_name = 'PRIMARY'", (t,))
        ist = {k: int(v) for k, v in c.fetchall()}
        c.execute("SELECT FILE_SIZE, ALLOCATED_SIZE FROM information_schema.INNODB_SYS_TABLESPACES "
                  "WHERE NAME = %s", (f"keys_bench/{t}",))
        fsz = c.fetchone() or (None, None)
        curve, r_first, r_last, r_all = rate_curve(batches, args.rows)
        rq, rd = d["Innodb_buffer_pool_read_requests"], d["Innodb_buffer_pool_reads"]
        r = {
            "rows": int(nrows), "distinct_keys": int(ndistinct), "load_s": s["load_s"],
            "insert_rate": r_all, "insert_rate_first10": r_first, "insert_rate_last10": r_last,
            "rate_curve": curve,
            "clustered_bytes": int(dlen), "secondary_bytes": int(ilen),
            "clustered_pages": ist.get("size"), "leaf_pages": ist.get("n_leaf_pages"),
            "file_bytes": fsz[0],
            "leaf_bytes_per_row": (ist.get("n_leaf_pages") or 0) * int(page) / max(1, int(nrows)),
            "page_splits": d.get("index_page_splits"),
            "page_merge_attempts": d.get("index_page_merge_attempts"),
            "page_merges": d.get("index_page_merge_successful"),
            "page_reorgs": d.get("index_page_reorg_attempts"),
            "page_discards": d.get("index_page_discards"),
            "redo_bytes": d["Innodb_os_log_written"], "data_written_bytes": d["Innodb_data_written"],
            "pages_written": d["Innodb_pages_written"], "dblwr_pages": d["Innodb_dblwr_pages_written"],
            "bp_read_requests": rq, "bp_reads": rd, "bp_hit_ratio": (rq - rd) / rq if rq else None,
        }
        c.execute(f"SELECT id FROM {t} ORDER BY RAND() LIMIT %s", (args.lookups,))
        sample = [x[0] for x in c.fetchall()]
        conn.commit()
        r["lookup_us"] = time_lookups(c, f"SELECT n, payload FROM {t} WHERE id = %s", sample,
                                      f"mariadb {kind}")
        conn.commit()
        if kind in ("snowflake", "uuidv7"):
            r["scan_path"] = "primary key range"
            q = f"SELECT count(*), sum(n) FROM {t} WHERE id BETWEEN %s AND %s"
        else:
            t0 = time.perf_counter()
            c.execute(f"ALTER TABLE {t} ADD INDEX created (created_at)")
            c.execute(f"ANALYZE TABLE {t}")
            c.fetchall()
            r["created_index_s"] = time.perf_counter() - t0
            r["scan_path"] = "created_at index (built after the load)"
            q = f"SELECT count(*), sum(n) FROM {t} WHERE created_at BETWEEN FROM_UNIXTIME(%s) AND FROM_UNIXTIME(%s)"
        r["scan_ms"], r["scan_rows_avg"] = time_scans(c, q, kind, s["batch_t"], args.scans)
        conn.commit()
        res["kinds"][kind] = r
        print(f"bench-keys: mariadb {kind}: {r_all:,.0f} rows/s, clustered {int(dlen) / 1048576:.1f} MB, "
              f"splits {r['page_splits']}", file=sys.stderr)
    conn.close()
    return res


# ---------------------------------------------------------------- output

def mb(x):
    return "-" if x is None else f"{x / 1048576:.1f}"


def f0(x):
    return "-" if x is None else f"{x:,.0f}"


def f1(x):
    return "-" if x is None else f"{x:.1f}"


def f2(x):
    return "-" if x is None else f"{x:.2f}"


def table(headers, rows):
    w = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = lambda cells: "| " + " | ".join(str(c).rjust(w[i]) if i else str(c).ljust(w[i])
                                           for i, c in enumerate(cells)) + " |"
    sep = "|" + "|".join("-" * (x + 2) for x in w) + "|"
    return "\n".join([line(headers), sep] + [line(r) for r in rows])


def render(meta, res):
    out = []
    out.append("flakewire primary-key benchmark (scripts/bench/keys.sh)")
    out.append(f"command:   {meta['command']}")
    out.append(f"date:      {meta['date']}")
    out.append(f"machine:   {meta['machine']}")
    out.append(f"load avg:  {meta['loadavg_start']} at start, {meta['loadavg_end']} at end")
    out.append(f"rows:      {meta['rows']:,} per kind and database, {meta['batch']} per transaction; "
               f"{meta['lookups']} point lookups, {meta['scans']} time-range scans of 1 % of the rows each")
    out.append(f"payload:   {PAYLOAD_DESC}")
    out.append(f"UUIDv7:    {meta['uuid7_source']}")
    out.append(f"Snowflake: flakesock {meta['server']}, default layout 41/0/10/12, "
               f"`flakectl get --range --csv -n {meta['batch']}` per batch "
               f"(fetch time {meta['fetch_s']:.1f} s, not in the insert rates; {meta['fetch_retries']} calls retried)")
    if "pg" in res:
        p = res["pg"]
        out.append("")
        out.append(f"PostgreSQL: {p['server_version']}")
        out.append(f"  settings: {meta['pg_settings']}; CHECKPOINT after every tenth of the rows")
        rows = []
        for k, r in p["kinds"].items():
            rows.append([k, KEY_DESC[k][1], f0(r["insert_rate"]), f0(r["insert_rate_first10"]),
                         f0(r["insert_rate_last10"]), mb(r["index_bytes"]), mb(r["table_bytes"]),
                         f1(r["avg_leaf_density"]), f1(r["leaf_fragmentation"]), r["tree_level"],
                         mb(r["wal_bytes"]), f0(r["wal_fpi"]),
                         f1(100 * r["idx_hit_ratio"]) if r["idx_hit_ratio"] is not None else "-",
                         f"{f0(r['lookup_us']['p50'])}/{f0(r['lookup_us']['p99'])}",
                         f"{f2(r['scan_ms']['p50'])}/{f2(r['scan_ms']['p99'])}"])
        out.append(table(["kind", "key B", "rows/s", "first 10%", "last 10%", "index MB", "heap MB",
                          "leaf dens %", "leaf frag %", "levels", "WAL MB", "FPI", "idx hit %",
                          "lookup p50/p99 us", "scan p50/p99 ms"], rows))
        big = max(r["index_bytes"] for r in p["kinds"].values())
        if big <= meta["pool_mb"] * 1048576:
            out.append(f"  WARNING: the largest index ({mb(big)} MB) fits in shared_buffers "
                       f"({meta['pool_mb']} MB): use more --rows or a smaller --pool-mb")
    if "mariadb" in res:
        m = res["mariadb"]
        out.append("")
        out.append(f"MariaDB: {m['server_version']} (InnoDB, page {m['innodb_page_size']} B)")
        out.append(f"  settings: {meta['my_settings']}")
        rows = []
        for k, r in m["kinds"].items():
            rows.append([k, KEY_DESC[k][1], f0(r["insert_rate"]), f0(r["insert_rate_first10"]),
                         f0(r["insert_rate_last10"]), mb(r["clustered_bytes"]), f0(r["leaf_bytes_per_row"]),
                         f0(r["leaf_pages"]), f0(r["page_splits"]), f0(r["page_merges"]),
                         mb(r["redo_bytes"]), mb(r["data_written_bytes"]),
                         f1(100 * r["bp_hit_ratio"]) if r["bp_hit_ratio"] is not None else "-",
                         f"{f0(r['lookup_us']['p50'])}/{f0(r['lookup_us']['p99'])}",
                         f"{f2(r['scan_ms']['p50'])}/{f2(r['scan_ms']['p99'])}"])
        out.append(table(["kind", "key B", "rows/s", "first 10%", "last 10%", "table MB", "leaf B/row",
                          "leaf pages", "splits", "merges", "redo MB", "written MB", "bp hit %",
                          "lookup p50/p99 us", "scan p50/p99 ms"], rows))
        big = max(r["clustered_bytes"] for r in m["kinds"].values())
        if big <= meta["pool_mb"] * 1048576:
            out.append(f"  WARNING: the largest table ({mb(big)} MB) fits in the buffer pool "
                       f"({meta['pool_mb']} MB): use more --rows or a smaller --pool-mb")
    out.append("")
    out.append("rows/s: rows over the time of the INSERT and COMMIT of each batch (key fetch and "
               "checkpoints excluded); first/last 10%: the same over the first and last tenth of the "
               "batches. index MB: the primary key index (PostgreSQL); table MB: the clustered primary "
               "key = the table (InnoDB, data_length after ANALYZE). leaf dens/frag: pgstatindex. "
               "WAL MB: WAL written during the load; FPI: full-page images (pg_stat_wal). idx hit %: "
               "primary key index blocks found in shared_buffers during the load "
               "(pg_statio_user_indexes); bp hit %: InnoDB buffer pool read requests served without a "
               "read. splits/merges: INNODB_METRICS index_page_splits / index_page_merge_successful. "
               "written MB: Innodb_data_written (pages, doublewrite, redo). lookup: one SELECT by key "
               "from Python (round trip included); scan: count and sum of the rows inserted while "
               "1 % of the batches were (a time window), by primary key range for snowflake and uuidv7, by a created_at "
               "index built after the load for the others.")
    return "\n".join(out) + "\n"


def plots(out_dir, res, meta):
    dbs = [d for d in ("pg", "mariadb") if d in res]
    title = {"pg": "PostgreSQL 15", "mariadb": "MariaDB (InnoDB)"}
    for d in dbs:
        for k, r in res[d]["kinds"].items():
            with open(os.path.join(out_dir, f"keys-rate-{d}-{k}.dat"), "w") as f:
                for rows, rate in r["rate_curve"]:
                    f.write(f"{rows} {rate:.1f}\n")
    gp = os.path.join(out_dir, "keys.gp")
    with open(gp, "w") as f:
        f.write(f"set terminal png size 1000,{420 * len(dbs)}\n")
        f.write(f"set output '{os.path.join(out_dir, 'keys-insert-rate.png')}'\n")
        f.write(f"set multiplot layout {len(dbs)},1\n")
        f.write("set grid\nset key outside right\nset xlabel 'rows inserted'\n"
                "set ylabel 'rows/s (log scale)'\nset format x '%.0s%c'\nset logscale y\n"
                "set format y '%.0s%c'\n")
        for d in dbs:
            f.write(f"set title '{title[d]}: insert rate while the index grows "
                    f"(pool {meta['pool_mb']} MB, batches of {meta['batch']})'\n")
            parts = [f"'{os.path.join(out_dir, f'keys-rate-{d}-{k}.dat')}' using 1:2 with lines lw 2 title '{k}'"
                     for k in res[d]["kinds"]]
            f.write("plot " + ", ".join(parts) + "\n")
        f.write("unset multiplot\n")
        # index sizes: one bar group per kind, one bar per database
        kinds = [k for k in KINDS if any(k in res[d]["kinds"] for d in dbs)]
        dat = os.path.join(out_dir, "keys-size.dat")
        with open(dat, "w") as g:
            for k in kinds:
                pgv = res["pg"]["kinds"][k]["index_bytes"] / 1048576 if "pg" in res and k in res["pg"]["kinds"] else 0
                myv = (res["mariadb"]["kinds"][k]["clustered_bytes"] / 1048576
                       if "mariadb" in res and k in res["mariadb"]["kinds"] else 0)
                g.write(f"{k} {pgv:.2f} {myv:.2f}\n")
        f.write("reset\nset terminal png size 900,480\n")
        f.write(f"set output '{os.path.join(out_dir, 'keys-index-size.png')}'\n")
        f.write(f"set title 'Primary key size after {meta['rows']:,} rows per kind'\n")
        f.write("set style data histograms\nset style histogram clustered gap 1\n"
                "set style fill solid 0.8 border -1\nset boxwidth 0.9\nset grid y\n"
                "set ylabel 'MB'\nset yrange [0:*]\nset key top left\n")
        f.write(f"plot '{dat}' using 2:xtic(1) title 'PostgreSQL: primary key index', "
                f"'' using 3 title 'InnoDB: clustered primary key (= table)'\n")
    r = subprocess.run(["gnuplot", gp], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        die(f"gnuplot failed: {r.stderr.strip()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pg")
    ap.add_argument("--mariadb")
    ap.add_argument("--flakectl", required=True)
    ap.add_argument("--server", required=True)
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--pool-mb", type=int, required=True)
    ap.add_argument("--lookups", type=int, required=True)
    ap.add_argument("--scans", type=int, required=True)
    ap.add_argument("--kinds", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="")
    ap.add_argument("--pg-version", default="")
    ap.add_argument("--pg-settings", default="")
    ap.add_argument("--my-version", default="")
    ap.add_argument("--my-settings", default="")
    args = ap.parse_args()
    kinds = [k for k in KINDS if k in args.kinds.split(",")]
    keys = KeySource(args)
    uname = platform.uname()
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    meta = {
        "command": args.command,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": f"{os.cpu_count()} cores, {cpu}, {uname.system} {uname.release}",
        "loadavg_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "rows": args.rows, "batch": args.batch, "pool_mb": args.pool_mb,
        "lookups": args.lookups, "scans": args.scans, "server": args.server,
        "uuid7_source": keys.uuid7_source, "uuid7_from_flakewire": keys.uuid7_from_flakewire,
        "pg_version": args.pg_version, "pg_settings": args.pg_settings,
        "my_version": args.my_version, "my_settings": args.my_settings,
        "key_bytes": {k: KEY_DESC[k][1] for k in KINDS},
    }
    res = {}
    t0 = time.time()
    if args.pg:
        res["pg"] = pg_run(args, keys, kinds)
    if args.mariadb:
        res["mariadb"] = my_run(args, keys, kinds)
    meta["elapsed_s"] = time.time() - t0
    meta["fetch_s"] = keys.fetch_s
    meta["fetch_retries"] = keys.fetch_retries
    meta["loadavg_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "keys.json"), "w") as f:
        json.dump({"meta": meta, "results": res}, f, indent=1)
    txt = render(meta, res)
    with open(os.path.join(args.out, "keys.txt"), "w") as f:
        f.write(txt)
    plots(args.out, res, meta)
    sys.stdout.write(txt)
    print(f"bench-keys: {args.out}/keys.txt, keys.json, keys-insert-rate.png, keys-index-size.png "
          f"({meta['elapsed_s']:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
