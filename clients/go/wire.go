// SPDX-License-Identifier: BSD-3-Clause

package flakewire

import (
	"encoding/binary"
	"fmt"
)

// Protocol version 1 constants (lib/wire/PROTOCOL.md).
const (
	Magic       = 0x464B
	Version     = 1
	HdrLen      = 24
	DefaultPort = 4242
	MTUPayload  = 1472

	OpID    = 1
	OpList  = 2
	OpRange = 3
	OpInfo  = 4
	OpUUID7 = 5
	OpReply = 0x80

	StOK          = 0
	StBadRequest  = 1
	StBadVersion  = 2
	StRetryAfter  = 3
	StRefused     = 4
	StClockUnsafe = 5
	StNoLease     = 6

	FlagBorrowed = 0x01
	FlagBackstep = 0x02
	FlagUnsafe   = 0x04
	FlagPartial  = 0x08
	FlagSlewing  = 0x10

	InfoFeatureUUID7 = 0x1

	ListMax       = 181 // (1472 - 24) / 8
	RangesMax     = 16
	RangeIDsMax   = 65535
	UUID7Max      = 90 // (1472 - 24) / 16
	rangeIDsPerMs = 4096
)

var statusNames = []string{"ok", "bad-request", "bad-version", "retry-after", "refused",
	"clock-unsafe", "no-lease"}

// StatusName names a status code ("retry-after"), "unknown" when it is not one.
func StatusName(st uint8) string {
	if int(st) < len(statusNames) {
		return statusNames[st]
	}
	return "unknown"
}

// WireError is a datagram that is not a valid reply. Reason is "short",
// "magic", "version" or "bad" (PROTOCOL.md section 9); Tag is the reply's
// tag for "version".
type WireError struct {
	Reason string
	Tag    uint64
}

func (e *WireError) Error() string { return "flakewire: invalid reply: " + e.Reason }

// Info is the body of an INFO reply.
type Info struct {
	EpochMs       uint64
	TimeBits      uint8
	DcBits        uint8
	WorkerBits    uint8
	SeqBits       uint8
	VersionMin    uint8
	VersionMax    uint8
	ListMax       uint16
	RangesMax     uint16
	MaxBorrowMs   uint16
	Features      uint32
	ClockOffsetNs int64
}

// SupportsUUID7 says whether the responder advertises the UUID7 op.
func (i Info) SupportsUUID7() bool { return i.Features&InfoFeatureUUID7 != 0 }

// Range is the IDs First, First+1, ..., First+N-1.
type Range struct {
	First uint64
	N     uint32
}

// Reply is a parsed reply. Op carries the reply bit.
type Reply struct {
	Op, Status, Flags  uint8
	Count              uint16
	Tag                uint64
	Datacenter, Worker uint16
	RetryAfterUs       uint32
	IDs                []uint64   // ID, LIST
	Ranges             []Range    // RANGE
	Info               *Info      // INFO
	UUIDs              [][16]byte // UUID7
}

// RequestSize is the size a request is padded to so that a full reply is
// no larger (PROTOCOL.md section 6), for a responder with seqBits sequence
// bits (RANGE: 2^seqBits IDs per range; 12 before its INFO is known); 0
// for an unknown op.
func RequestSize(op uint8, count uint16, seqBits int) int {
	var n int
	per := rangeIDsPerMs
	if seqBits >= 1 && seqBits <= 22 {
		per = 1 << seqBits
	}
	switch op {
	case OpID:
		n = HdrLen + 8
	case OpList:
		n = HdrLen + 8*int(count)
	case OpInfo:
		n = HdrLen + 32
	case OpUUID7:
		n = HdrLen + 16*int(count)
	case OpRange:
		r := (int(count)+per-1)/per + 1
		if r > RangesMax {
			r = RangesMax
		}
		n = HdrLen + 12*r
	default:
		return 0
	}
	if n < HdrLen {
		n = HdrLen
	}
	return n
}

// EncodeRequest builds the request datagram, zero-padded to
// RequestSize(op, count, seqBits) when pad is true (24 bytes otherwise).
func EncodeRequest(op uint8, count uint16, tag uint64, pad bool, seqBits int) []byte {
	n := HdrLen
	if pad && RequestSize(op, count, seqBits) > n {
		n = RequestSize(op, count, seqBits)
	}
	b := make([]byte, n)
	binary.BigEndian.PutUint16(b[0:], Magic)
	b[2] = Version
	b[3] = op
	binary.BigEndian.PutUint16(b[6:], count)
	binary.BigEndian.PutUint64(b[8:], tag)
	return b
}

func replyMax(op uint8) (max int, entry int) {
	switch op {
	case OpID:
		return 1, 8
	case OpList:
		return ListMax, 8
	case OpRange:
		return RangesMax, 12
	case OpInfo:
		return 1, 32
	case OpUUID7:
		return UUID7Max, 16
	}
	return 0, 0
}

// ParseReply parses one reply datagram; a *WireError says why it is not
// one, in the order and with the reasons of fw_wire_parse_reply.
func ParseReply(b []byte) (*Reply, error) {
	if len(b) < HdrLen {
		return nil, &WireError{Reason: "short"}
	}
	if binary.BigEndian.Uint16(b) != Magic {
		return nil, &WireError{Reason: "magic"}
	}
	r := &Reply{Op: b[3], Status: b[4], Flags: b[5], Count: binary.BigEndian.Uint16(b[6:]),
		Tag: binary.BigEndian.Uint64(b[8:]), Datacenter: binary.BigEndian.Uint16(b[16:]),
		Worker: binary.BigEndian.Uint16(b[18:]), RetryAfterUs: binary.BigEndian.Uint32(b[20:])}
	if b[2] != Version {
		return nil, &WireError{Reason: "version", Tag: r.Tag}
	}
	if r.Op&OpReply == 0 || int(r.Status) >= len(statusNames) {
		return nil, &WireError{Reason: "bad"}
	}
	op := r.Op &^ OpReply
	max, entry := replyMax(op)
	if max == 0 {
		return nil, &WireError{Reason: "bad"}
	}
	need := 0
	if r.Status != StOK {
		if r.Count == 0 {
			need = HdrLen
		}
	} else if r.Count != 0 && int(r.Count) <= max {
		need = HdrLen + entry*int(r.Count)
	}
	if need == 0 {
		return nil, &WireError{Reason: "bad"}
	}
	if len(b) < need {
		return nil, &WireError{Reason: "short"}
	}
	if len(b) > need {
		return nil, &WireError{Reason: "bad"}
	}
	if r.Status != StOK {
		return r, nil
	}
	body := b[HdrLen:]
	switch op {
	case OpID, OpList:
		r.IDs = make([]uint64, r.Count)
		for i := range r.IDs {
			r.IDs[i] = binary.BigEndian.Uint64(body[8*i:])
		}
	case OpRange:
		r.Ranges = make([]Range, r.Count)
		for i := range r.Ranges {
			r.Ranges[i] = Range{binary.BigEndian.Uint64(body[12*i:]),
				binary.BigEndian.Uint32(body[12*i+8:])}
			if r.Ranges[i].N == 0 {
				return nil, &WireError{Reason: "bad"}
			}
		}
	case OpInfo:
		r.Info = &Info{EpochMs: binary.BigEndian.Uint64(body), TimeBits: body[8],
			DcBits: body[9], WorkerBits: body[10], SeqBits: body[11], VersionMin: body[12],
			VersionMax: body[13], ListMax: binary.BigEndian.Uint16(body[14:]),
			RangesMax:     binary.BigEndian.Uint16(body[16:]),
			MaxBorrowMs:   binary.BigEndian.Uint16(body[18:]),
			Features:      binary.BigEndian.Uint32(body[20:]),
			ClockOffsetNs: int64(binary.BigEndian.Uint64(body[24:]))}
	case OpUUID7:
		r.UUIDs = make([][16]byte, r.Count)
		for i := range r.UUIDs {
			copy(r.UUIDs[i][:], body[16*i:])
		}
	}
	return r, nil
}

// FormatUUID writes a UUID in the canonical 36-character text form.
func FormatUUID(u [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
