// SPDX-License-Identifier: BSD-3-Clause

package flakewire

import "fmt"

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
