// SPDX-License-Identifier: BSD-3-Clause

package flakewire

import (
	"encoding/binary"
	"fmt"
)

// DefaultEpochMs is 2026-01-01T00:00:00Z in Unix ms.
const DefaultEpochMs = 1767225600000

// Layout is the Snowflake ID layout: 1 sign bit, then time, datacenter,
// worker and sequence fields whose widths add up to 63.
type Layout struct {
	EpochMs                               uint64
	TimeBits, DcBits, WorkerBits, SeqBits uint8
}

// DefaultLayout is 41/0/10/12 with epoch 2026-01-01.
var DefaultLayout = Layout{DefaultEpochMs, 41, 0, 10, 12}

// Parts is an ID taken apart.
type Parts struct {
	Ms, UnixMs                   uint64
	Datacenter, Worker, Sequence uint32
}

// Validate returns an error naming the field when l is not a layout
// flakewire can issue (the bounds of fw_layout_validate).
func (l Layout) Validate() error {
	switch {
	case l.SeqBits < 1 || l.SeqBits > 22:
		return fmt.Errorf("flakewire: seq_bits %d not in 1..22", l.SeqBits)
	case l.DcBits > 10:
		return fmt.Errorf("flakewire: dc_bits %d not in 0..10", l.DcBits)
	case l.WorkerBits > 16:
		return fmt.Errorf("flakewire: worker_bits %d not in 0..16", l.WorkerBits)
	case l.TimeBits < 32:
		return fmt.Errorf("flakewire: time_bits %d below 32", l.TimeBits)
	case int(l.TimeBits)+int(l.DcBits)+int(l.WorkerBits)+int(l.SeqBits) != 63:
		return fmt.Errorf("flakewire: field widths do not add up to 63")
	case l.EpochMs >= 1<<42:
		return fmt.Errorf("flakewire: epoch_ms %d out of range", l.EpochMs)
	}
	return nil
}

// Decode takes an ID apart; an error when the sign bit is set.
func (l Layout) Decode(id uint64) (Parts, error) {
	if id>>63 != 0 {
		return Parts{}, fmt.Errorf("flakewire: ID %d is not a positive int64", id)
	}
	s, w, d := uint(l.SeqBits), uint(l.WorkerBits), uint(l.DcBits)
	p := Parts{
		Sequence:   uint32(id & (1<<s - 1)),
		Worker:     uint32(id >> s & (1<<w - 1)),
		Datacenter: uint32(id >> (s + w) & (1<<d - 1)),
		Ms:         id >> (s + w + d),
	}
	p.UnixMs = p.Ms + l.EpochMs
	return p, nil
}

// UUID7UnixMs is the unix_ts_ms of a UUIDv7; an error when u is not
// version 7 with the RFC 9562 variant.
func UUID7UnixMs(u [16]byte) (uint64, error) {
	if u[6]>>4 != 7 || u[8]>>6 != 2 {
		return 0, fmt.Errorf("flakewire: %s is not a UUIDv7", FormatUUID(u))
	}
	var ms uint64
	for _, b := range u[:6] {
		ms = ms<<8 | uint64(b)
	}
	return ms, nil
}

// UUID7Tag marks a UUIDv7 made in flakewire's layout.
const UUID7Tag = 0xF7

// UUIDParts is what ReadUUID finds in a UUID.
type UUIDParts struct {
	Version, Variant int // Variant: 0 (0xx), 2 (10x, RFC 9562), 6 (110), 7 (111)
	IsV7             bool
	UnixMs           uint64 // when IsV7
	Flakewire        bool   // IsV7 and the tag 0xF7 sits where the layout puts it
	Counter          uint32 // these three when Flakewire
	Datacenter       uint32
	Worker           uint32
}

// ReadUUID reads any UUID; for a UUIDv7 made by flakewire in layout l also
// its counter, datacenter and worker (PROTOCOL.md, "UUID7 reply body").
func (l Layout) ReadUUID(u [16]byte) UUIDParts {
	hi := binary.BigEndian.Uint64(u[:8])
	lo := binary.BigEndian.Uint64(u[8:])
	p := UUIDParts{Version: int(hi >> 12 & 0xF)}
	top := int(lo >> 61)
	switch {
	case top < 4:
		p.Variant = 0
	case top < 6:
		p.Variant = 2
	default:
		p.Variant = top
	}
	if p.Version != 7 || p.Variant != 2 {
		return p
	}
	p.IsV7, p.UnixMs = true, hi>>16
	// P: rand_a (12 bits) then rand_b (62 bits), 74 bits as randA:randB.
	randA, randB := hi&0xFFF, lo&(1<<62-1)
	s, d, w := uint(l.SeqBits), uint(l.DcBits), uint(l.WorkerBits)
	field := func(off, width uint) uint64 { // bits [off, off+width) of P, MSB first
		var v uint64
		for i := off; i < off+width; i++ {
			var bit uint64
			if i < 12 {
				bit = randA >> (11 - i) & 1
			} else {
				bit = randB >> (73 - i) & 1
			}
			v = v<<1 | bit
		}
		return v
	}
	if field(s+d+w, 8) != UUID7Tag {
		return p
	}
	p.Flakewire = true
	p.Counter, p.Datacenter, p.Worker = uint32(field(0, s)), uint32(field(s, d)), uint32(field(s+d, w))
	return p
}
