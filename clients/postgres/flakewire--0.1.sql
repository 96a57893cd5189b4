-- SPDX-License-Identifier: BSD-3-Clause
-- flakewire for PostgreSQL: IDs from a flakewire fleet (doc/postgres.md).
\echo Use "CREATE EXTENSION flakewire" to load this file. \quit

-- Volatile: every call returns a new ID. PARALLEL RESTRICTED, not SAFE: it
-- uses the backend's own client and prefetch buffer (backend-local state a
-- parallel worker does not share), so it runs in the leader only; that keeps
-- one session's IDs increasing and costs no extra round trip per worker.
CREATE FUNCTION flakewire_next() RETURNS bigint
	AS 'MODULE_PATHNAME', 'flakewire_next'
	LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION flakewire_next() IS
'A new ID from the flakewire fleet (flakewire.servers): positive, unique across every '
'backend and server using the fleet, increasing within a session while one responder '
'serves it, time-ordered across sessions. Taken from the backend''s prefetch buffer '
'(flakewire.prefetch), so most calls cost no round trip. An ID is never handed out '
'twice, not even after the transaction that took it rolls back (like nextval). '
'A fleet that does not answer raises SQLSTATE 08006 within flakewire.timeout, each '
'call''s deadline; a cancel or statement_timeout interrupts '
'the wait. Use it as a column default: id bigint PRIMARY KEY DEFAULT flakewire_next().';

CREATE FUNCTION flakewire_next_uuid7() RETURNS uuid
	AS 'MODULE_PATHNAME', 'flakewire_next_uuid7'
	LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION flakewire_next_uuid7() IS
'A new UUIDv7 (RFC 9562) from the flakewire fleet, in flakewire''s layout: the '
'responder''s Unix ms, its sequence as the counter, its datacenter and worker, then '
'random bits; unique as the IDs are, increasing per responder worker. Buffered and '
'interruptible like flakewire_next(). Use it as a uuid column default.';

CREATE FUNCTION flakewire_decode(id bigint,
	OUT "time" timestamptz, OUT datacenter integer, OUT worker integer,
	OUT sequence integer)
	AS 'MODULE_PATHNAME', 'flakewire_decode'
	LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION flakewire_decode(bigint) IS
'Takes an ID apart in the responders'' layout (flakewire.epoch_ms, '
'flakewire.datacenter_bits, flakewire.worker_bits, flakewire.sequence_bits, checked '
'against each responder''s INFO when a backend first connects): the millisecond it '
'was issued in, the datacenter, the worker and the sequence within that millisecond. '
'Agrees with flakectl decode given the same layout. STABLE because it reads settings.';

CREATE FUNCTION flakewire_time(id bigint) RETURNS timestamptz
	AS 'MODULE_PATHNAME', 'flakewire_time'
	LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION flakewire_time(bigint) IS
'The millisecond an ID was issued in (the time field of flakewire_decode). For a time '
'range over an indexed ID column, compare the column with flakewire_min_id() instead: '
'flakewire_time(id) >= t is exactly id >= flakewire_min_id(t).';

CREATE FUNCTION flakewire_min_id(t timestamptz) RETURNS bigint
	AS 'MODULE_PATHNAME', 'flakewire_min_id'
	LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION flakewire_min_id(timestamptz) IS
'The smallest ID issued at or after t (its millisecond rounded up, every other field '
'0; 0 before the epoch). WHERE id >= flakewire_min_id(''2026-12-01'') AND id < '
'flakewire_min_id(''2026-12-02'') selects one day of rows as an index range scan on '
'id: STABLE, so the planner uses it as an index bound.';
