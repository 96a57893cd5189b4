// SPDX-License-Identifier: BSD-3-Clause

package flakewire

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

func vectorPath() string {
	if p := os.Getenv("FW_VECTORS"); p != "" {
		return p
	}
	return "../../tests/vectors/wire.vec"
}

type vec struct {
	kind string
	kv   map[string]string
}

func loadVectors(t *testing.T) []vec {
	f, err := os.Open(vectorPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []vec
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<16)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		toks := strings.Split(line, " ")
		v := vec{toks[0], map[string]string{}}
		for _, tok := range toks[1:] {
			k, val, _ := strings.Cut(tok, "=")
			v.kv[k] = val
		}
		out = append(out, v)
	}
	return out
}

func num(t *testing.T, s string) uint64 {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	return v
}

func TestVectors(t *testing.T) {
	counts := map[string]int{}
	for _, v := range loadVectors(t) {
		v := v
		counts[v.kind]++
		switch v.kind {
		case "req":
			tag, _ := strconv.ParseUint(v.kv["tag"], 16, 64)
			got := EncodeRequest(uint8(num(t, v.kv["op"])), uint16(num(t, v.kv["count"])), tag, v.kv["pad"] == "1", int(num(t, v.kv["seq"])))
			if hex.EncodeToString(got) != v.kv["bytes"] {
				t.Errorf("req %s: bytes differ", v.kv["name"])
			}
		case "rep":
			b, _ := hex.DecodeString(v.kv["bytes"])
			r, err := ParseReply(b)
			name, want := v.kv["name"], v.kv["result"]
			if want != "ok" {
				var we *WireError
				if !errors.As(err, &we) || we.Reason != want {
					t.Errorf("rep %s: got %v, want %s", name, err, want)
				} else if want == "version" && fmt.Sprintf("%016x", we.Tag) != v.kv["tag"] {
					t.Errorf("rep %s: tag of a version reply", name)
				}
				continue
			}
			if err != nil {
				t.Errorf("rep %s: %v", name, err)
				continue
			}
			hdr := fmt.Sprintf("%d %d %d %d %016x %d %d %d", r.Op, r.Status, r.Flags, r.Count, r.Tag, r.Datacenter, r.Worker, r.RetryAfterUs)
			wantHdr := strings.Join([]string{v.kv["op"], v.kv["status"], v.kv["flags"], v.kv["count"], v.kv["tag"], v.kv["dc"], v.kv["worker"], v.kv["retry_us"]}, " ")
			if hdr != wantHdr {
				t.Errorf("rep %s: header %s, want %s", name, hdr, wantHdr)
			}
			var body []string
			if s, ok := v.kv["ids"]; ok {
				for _, id := range r.IDs {
					body = append(body, strconv.FormatUint(id, 10))
				}
				if strings.Join(body, ",") != s {
					t.Errorf("rep %s: ids differ", name)
				}
			}
			if s, ok := v.kv["ranges"]; ok {
				for _, x := range r.Ranges {
					body = append(body, fmt.Sprintf("%d:%d", x.First, x.N))
				}
				if strings.Join(body, ",") != s {
					t.Errorf("rep %s: ranges differ", name)
				}
			}
			if s, ok := v.kv["info"]; ok {
				i := r.Info
				got := fmt.Sprintf("%d:%d:%d:%d:%d:%d:%d:%d:%d:%d:%d:%d", i.EpochMs, i.TimeBits, i.DcBits, i.WorkerBits, i.SeqBits, i.VersionMin, i.VersionMax, i.ListMax, i.RangesMax, i.MaxBorrowMs, i.Features, i.ClockOffsetNs)
				if got != s {
					t.Errorf("rep %s: info %s, want %s", name, got, s)
				}
			}
			if s, ok := v.kv["uuids"]; ok {
				for _, u := range r.UUIDs {
					body = append(body, hex.EncodeToString(u[:]))
				}
				if strings.Join(body, ",") != s {
					t.Errorf("rep %s: uuids differ", name)
				}
			}
		case "dec":
			var l Layout
			l.EpochMs = num(t, v.kv["epoch"])
			fmt.Sscanf(v.kv["bits"], "%d:%d:%d:%d", &l.TimeBits, &l.DcBits, &l.WorkerBits, &l.SeqBits)
			if err := l.Validate(); err != nil {
				t.Fatal(err)
			}
			p, err := l.Decode(num(t, v.kv["id"]))
			if err != nil || p.Ms != num(t, v.kv["ms"]) || p.UnixMs != num(t, v.kv["unix_ms"]) ||
				uint64(p.Datacenter) != num(t, v.kv["dc"]) || uint64(p.Worker) != num(t, v.kv["worker"]) ||
				uint64(p.Sequence) != num(t, v.kv["seq"]) {
				t.Errorf("dec %s: %+v", v.kv["id"], p)
			}
		case "uuid":
			var l Layout
			l.EpochMs = num(t, v.kv["epoch"])
			fmt.Sscanf(v.kv["bits"], "%d:%d:%d:%d", &l.TimeBits, &l.DcBits, &l.WorkerBits, &l.SeqBits)
			b, err := hex.DecodeString(strings.ReplaceAll(v.kv["text"], "-", ""))
			var u [16]byte
			copy(u[:], b)
			if err != nil || FormatUUID(u) != v.kv["text"] {
				t.Errorf("uuid %s: format", v.kv["text"])
			}
			p := l.ReadUUID(u)
			b2i := func(b bool) int {
				if b {
					return 1
				}
				return 0
			}
			got := fmt.Sprintf("%d %d %d %d %d %d %d %d", p.Version, p.Variant, b2i(p.IsV7), p.UnixMs, b2i(p.Flakewire), p.Counter, p.Datacenter, p.Worker)
			want := strings.Join([]string{v.kv["ver"], v.kv["var"], v.kv["v7"], v.kv["unix_ms"], v.kv["flakewire"], v.kv["counter"], v.kv["dc"], v.kv["worker"]}, " ")
			if got != want {
				t.Errorf("uuid %s: %s, want %s", v.kv["text"], got, want)
			}
		default:
			t.Errorf("unknown line kind %q", v.kind)
		}
	}
	if counts["req"] < 40 || counts["rep"] < 100 || counts["dec"] < 5 || counts["uuid"] < 8 {
		t.Fatalf("too few vectors: %v", counts)
	}
}
