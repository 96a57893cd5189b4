/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakewire for PostgreSQL: the database as one more client of the fleet.
 * The SQL API and its guarantees are in flakewire--0.1.sql and
 * doc/postgres.md.
 *
 * Each backend keeps one fw_client (lib/client), created on the first call
 * that needs the fleet and closed at backend exit (on_proc_exit), so most
 * rows take an ID from its prefetch buffer with no round trip. flakewire.timeout
 * is each call's deadline (issue 49; doc/clients.md, "Availability"):
 * flakewire.retries is accepted and no longer used. Changing a
 * connection setting (servers, timeout, prefetch) replaces the
 * client at its next use; the IDs left in the old buffer are dropped, never
 * handed out again, as are IDs taken by a transaction that rolls back.
 *
 * Waiting for a responder is interruptible: the client asks fw_pg_interrupted()
 * every FW_CLIENT_CANCEL_SLICE_MS and after each signal, gives up with
 * -ECANCELED when an interrupt is pending, and CHECK_FOR_INTERRUPTS() then
 * raises the cancel (statement_timeout, pg_cancel_backend) or the
 * termination, with the client's locks released.
 */
#include "postgres.h"

#include "common/int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

/* The project's headers are C11 (inline functions declare where they use);
 * PGXS builds with PostgreSQL's C90-style -Wdeclaration-after-statement. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeclaration-after-statement"
#include "fw_client.h"
#include "fw_err.h"
#include "fw_layout.h"
#pragma GCC diagnostic pop

PG_MODULE_MAGIC;

/* Most responders flakewire.servers may name. */
#define FW_PG_SERVERS_MAX  16
/* Largest epoch_ms the responders accept ([id] epoch_ms, 2^42 - 1). */
#define FW_PG_EPOCH_MS_MAX UINT64_C(4398046511103)
/* Unix ms of PostgreSQL's epoch, 2000-01-01T00:00:00Z. */
#define FW_PG_EPOCH_UNIX_MS \
	((int64)(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * INT64CONST(1000))

static const char FW_PG_SERVERS_FORM[] =
	"flakewire.servers is a comma-separated list, in failover order, of HOST[:PORT], "
	"[IPV6]:PORT or IPV6 (HOST a numeric IPv4 address or a host name, PORT 1-65535, "
	"default 4242), at most 16 entries";

/* Settings (GUCs) */
static char *fw_pg_servers;
static int fw_pg_timeout_ms = 1000;  /* each call's deadline */
static int fw_pg_retries = 2;        /* no longer used (issue 49) */
static int fw_pg_max_wait_ms = 2000; /* a non-superuser's bound on the deadline */
static int fw_pg_prefetch = 1024;
static char *fw_pg_epoch_ms;
static int fw_pg_dc_bits = 0;
static int fw_pg_worker_bits = 10;
static int fw_pg_seq_bits = 12;

/* The backend's client: NULL until first use, replaced when stale. */
static struct fw_client *fw_pg_client;
static bool fw_pg_client_stale;
static bool fw_pg_exit_hooked;

void _PG_init(void);
PG_FUNCTION_INFO_V1(flakewire_next);
PG_FUNCTION_INFO_V1(flakewire_next_uuid7);
PG_FUNCTION_INFO_V1(flakewire_decode);
PG_FUNCTION_INFO_V1(flakewire_time);
PG_FUNCTION_INFO_V1(flakewire_min_id);

/* ---- settings ---------------------------------------------------------- */

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static bool valid_port(const char *s)
{
	return all_digits(s) && strlen(s) <= 5 && atoi(s) >= 1 && atoi(s) <= 65535;
}

static bool valid_ipv6(const char *s, size_t len)
{
	char buf[INET6_ADDRSTRLEN + 1];
	struct in6_addr a;

	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return inet_pton(AF_INET6, buf, &a) == 1;
}

static bool valid_host(const char *s, size_t len)
{
	if (len == 0 || len > 253)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '-'))
			return false;
	return true;
}

/* One entry of flakewire.servers, in a form fw_client_open() parses. */
static bool valid_server(const char *e)
{
	const char *colon = strchr(e, ':');

	if (e[0] == '[') {
		const char *close = strchr(e, ']');

		return close && valid_ipv6(e + 1, (size_t)(close - e - 1)) &&
		       (close[1] == '\0' || (close[1] == ':' && valid_port(close + 2)));
	}
	if (colon && strchr(colon + 1, ':'))
		return valid_ipv6(e, strlen(e));
	if (!colon)
		return valid_host(e, strlen(e));
	return valid_host(e, (size_t)(colon - e)) && valid_port(colon + 1);
}

/*
 * Splits @s (comma-separated, blanks around entries ignored) into at most
 * FW_PG_SERVERS_MAX entries, palloc'd in the current context.
 * Returns the number of entries (0 for an empty string), or -1 with the
 * offending entry in *bad (NULL: too many) when one is malformed.
 */
static int split_servers(const char *s, char **out, const char **bad)
{
	char *copy = pstrdup(s ? s : "");
	char *save = NULL;
	int n = 0;

	*bad = NULL;
	/* strtok_r would skip empty entries: "a,,b" is refused instead */
	for (char *p = copy;; p = NULL) {
		char *e = p ? p : save;
		char *comma, *end;

		if (!e)
			break;
		comma = strchr(e, ',');
		save = comma ? comma + 1 : NULL;
		if (comma)
			*comma = '\0';
		while (*e == ' ' || *e == '\t')
			e++;
		end = e + strlen(e);
		while (end > e && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (!*e && !comma && n == 0)
			break; /* the empty string: no servers */
		if (!*e || !valid_server(e)) {
			*bad = pstrdup(e);
			return -1;
		}
		if (n == FW_PG_SERVERS_MAX)
			return -1;
		out[n++] = e;
		if (!comma)
			break;
	}
	return n;
}

static bool check_servers(char **newval, void **extra, GucSource source)
{
	char *entries[FW_PG_SERVERS_MAX];
	const char *bad;

	(void)extra;
	(void)source;
	if (split_servers(*newval, entries, &bad) >= 0)
		return true;
	if (bad)
		GUC_check_errdetail("\"%s\" is not a responder address. %s.", bad,
				    FW_PG_SERVERS_FORM);
	else
		GUC_check_errdetail("More than %d entries. %s.", FW_PG_SERVERS_MAX,
				    FW_PG_SERVERS_FORM);
	return false;
}

static bool check_epoch_ms(char **newval, void **extra, GucSource source)
{
	(void)extra;
	(void)source;
	if (all_digits(*newval) && strlen(*newval) <= 13 &&
	    strtoull(*newval, NULL, 10) <= FW_PG_EPOCH_MS_MAX)
		return true;
	GUC_check_errdetail("flakewire.epoch_ms is the responders' [id] epoch_ms: Unix "
			    "milliseconds, a decimal integer from 0 to %llu.",
			    (unsigned long long)FW_PG_EPOCH_MS_MAX);
	return false;
}

/* A connection setting changed: the client is replaced at its next use. */
static void assign_stale(void)
{
	fw_pg_client_stale = true;
}

static void assign_servers(const char *newval, void *extra)
{
	(void)newval;
	(void)extra;
	assign_stale();
}

static void assign_int_stale(int newval, void *extra)
{
	(void)newval;
	(void)extra;
	assign_stale();
}

/*
 * A call's deadline, flakewire.timeout: an ordinary user may not set it
 * above flakewire.max_wait (a superuser may), so that nobody but a superuser
 * makes a call wait long in a statement.
 */
static bool check_timeout(int *newval, void **extra, GucSource source)
{
	(void)extra;
	if (source < PGC_S_INTERACTIVE || *newval <= fw_pg_max_wait_ms || superuser())
		return true;
	GUC_check_errdetail("flakewire.timeout %d ms, a call's deadline, is above "
			    "flakewire.max_wait (%d ms), which only a superuser may exceed.",
			    *newval, fw_pg_max_wait_ms);
	return false;
}

void _PG_init(void)
{
	DefineCustomStringVariable(
		"flakewire.servers", "The flakewire responders, in failover order.",
		"A comma-separated list of HOST[:PORT], [IPV6]:PORT or IPV6 (default port "
		"4242). Superuser only: it says where the backend sends datagrams.",
		&fw_pg_servers, "", PGC_SUSET, 0, check_servers, assign_servers, NULL);
	DefineCustomIntVariable(
		"flakewire.timeout", "Each call's deadline.",
		"A call (one ID, one refill of the buffer) is answered or fails within it; "
		"silent responders are left for the next (hedged), busy ones retried.",
		&fw_pg_timeout_ms, 1000, 1, (int)FW_CLIENT_TIMEOUT_MS_MAX, PGC_USERSET, GUC_UNIT_MS,
		check_timeout, assign_int_stale, NULL);
	DefineCustomIntVariable("flakewire.retries",
				"No longer used: flakewire.timeout, the deadline, bounds a call.",
				NULL, &fw_pg_retries, 2, 0, (int)FW_CLIENT_RETRIES_MAX, PGC_USERSET,
				0, NULL, NULL, NULL);
	DefineCustomIntVariable(
		"flakewire.max_wait", "Longest deadline an ordinary user may set.",
		"Checked when a user who is not a superuser sets flakewire.timeout. Superuser "
		"only.",
		&fw_pg_max_wait_ms, 2000, 1, 3600000, PGC_SUSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable(
		"flakewire.prefetch", "IDs (and UUIDs) fetched per refill of a backend's buffer.",
		"A refill starts when a quarter of this remains.", &fw_pg_prefetch, 1024, 1,
		(int)FW_CLIENT_PREFETCH_MAX, PGC_USERSET, 0, NULL, assign_int_stale, NULL);
	DefineCustomStringVariable(
		"flakewire.epoch_ms", "The responders' epoch ([id] epoch_ms), Unix milliseconds.",
		"Used to decode IDs; checked against each responder's INFO when a backend "
		"first connects to the fleet.",
		&fw_pg_epoch_ms, "1767225600000", PGC_USERSET, 0, check_epoch_ms, NULL, NULL);
	DefineCustomIntVariable("flakewire.datacenter_bits",
				"The responders' [id] datacenter_bits.", NULL, &fw_pg_dc_bits, 0, 0,
				FW_LAYOUT_DC_BITS_MAX, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("flakewire.worker_bits", "The responders' [id] worker_bits.", NULL,
				&fw_pg_worker_bits, 10, 0, FW_LAYOUT_WORKER_BITS_MAX, PGC_USERSET,
				0, NULL, NULL, NULL);
	DefineCustomIntVariable("flakewire.sequence_bits", "The responders' [id] sequence_bits.",
				NULL, &fw_pg_seq_bits, 12, FW_LAYOUT_SEQ_BITS_MIN,
				FW_LAYOUT_SEQ_BITS_MAX, PGC_USERSET, 0, NULL, NULL, NULL);
	MarkGUCPrefixReserved("flakewire");
}

/* The layout the settings describe, or an error naming them. */
static struct fw_layout layout_from_settings(void)
{
	struct fw_layout l;
	int rc = fw_layout_init(&l, strtoull(fw_pg_epoch_ms, NULL, 10), (unsigned)fw_pg_dc_bits,
				(unsigned)fw_pg_worker_bits, (unsigned)fw_pg_seq_bits, 0);

	if (rc < 0)
		ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("flakewire: flakewire.datacenter_bits = %d, flakewire.worker_bits "
				"= %d and flakewire.sequence_bits = %d are not a layout: %s",
				fw_pg_dc_bits, fw_pg_worker_bits, fw_pg_seq_bits, fw_strerror(rc)),
			 errhint("Set them to the responders' [id] section; together they "
				 "must leave at least %d bits of time.",
				 FW_LAYOUT_TIME_BITS_MIN)));
	return l;
}

/* ---- the backend's client ---------------------------------------------- */

static void close_client(int code, Datum arg)
{
	(void)code;
	(void)arg;
	fw_client_close(fw_pg_client);
	fw_pg_client = NULL;
}

/* The client's cancel hook: an interrupt is pending that can be served now. */
static bool fw_pg_interrupted(void *arg)
{
	(void)arg;
	return INTERRUPTS_PENDING_CONDITION() && INTERRUPTS_CAN_BE_PROCESSED();
}

/*
 * Raises the error for @rc from a request to the fleet. @c (may be NULL)
 * gives the last status received.
 */
static void pg_attribute_noreturn() fleet_error(struct fw_client *c, int rc, const char *what)
{
	char did[512] = "";

	switch (rc) {
	case FW_ETIMEOUT:
		if (c)
			fw_client_last_error(c, did, sizeof(did));
		ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("flakewire: no responder answered %s (flakewire.servers = '%s')",
				what, fw_pg_servers),
			 errdetail("Within the deadline of %d ms (flakewire.timeout): %s.",
				   fw_pg_timeout_ms, did),
			 errhint("Check that the responders run and that this host reaches "
				 "them over UDP.")));
		break;
	case FW_ESTATUS:
		ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("flakewire: no responder could answer %s (flakewire.servers = "
				"'%s')",
				what, fw_pg_servers),
			 errdetail("The last status received: %s.",
				   c ? fw_wire_status_name(fw_client_last_status(c)) : "none")));
		break;
	case FW_EINVALID:
		ereport(ERROR, (errcode(ERRCODE_PROTOCOL_VIOLATION),
				errmsg("flakewire: a reply to %s failed validation; its IDs were "
				       "dropped (flakewire.servers = '%s')",
				       what, fw_pg_servers)));
		break;
	case -EOPNOTSUPP:
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("flakewire: the responder does not issue UUIDv7 "
				       "(flakewire.servers = '%s')",
				       fw_pg_servers)));
		break;
	default:
		ereport(ERROR, (errcode(ERRCODE_SYSTEM_ERROR),
				errmsg("flakewire: %s failed: %s (flakewire.servers = '%s')", what,
				       fw_strerror(rc), fw_pg_servers)));
	}
	pg_unreachable();
}

/* Checks that the responder's INFO has the layout the settings say. */
static void check_layout(const struct fw_wire_info *in)
{
	struct fw_layout l = layout_from_settings();

	if (in->epoch_ms == l.epoch_ms && in->dc_bits == l.dc_bits &&
	    in->worker_bits == l.worker_bits && in->seq_bits == l.seq_bits)
		return;
	ereport(ERROR,
		(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		 errmsg("flakewire: the responder's layout differs from the settings used to "
			"decode its IDs"),
		 errdetail("The responder has epoch_ms %llu, datacenter_bits %u, worker_bits %u, "
			   "sequence_bits %u; flakewire.epoch_ms, flakewire.datacenter_bits, "
			   "flakewire.worker_bits and flakewire.sequence_bits say %s, %d, %d, %d.",
			   (unsigned long long)in->epoch_ms, in->dc_bits, in->worker_bits,
			   in->seq_bits, fw_pg_epoch_ms, fw_pg_dc_bits, fw_pg_worker_bits,
			   fw_pg_seq_bits),
		 errhint("Set the flakewire.* layout settings to the responders' [id] "
			 "section.")));
}

/*
 * The backend's client, opened (and its responder's layout checked) on
 * first use or after a connection setting changed.
 */
static struct fw_client *get_client(void)
{
	char *entries[FW_PG_SERVERS_MAX];
	const char *bad;
	struct fw_client_opts o;
	struct fw_wire_info info;
	struct fw_client *c;
	int n, rc;

	if (fw_pg_client && !fw_pg_client_stale)
		return fw_pg_client;
	close_client(0, 0);
	n = split_servers(fw_pg_servers, entries, &bad);
	if (n <= 0)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("flakewire: flakewire.servers is empty"),
				errhint("Set it to the responders, e.g. ALTER DATABASE ... SET "
					"flakewire.servers = '10.0.0.1:4242, 10.0.0.2:4242'.")));
	fw_client_opts_init(&o);
	o.timeout_ms = (uint32_t)fw_pg_timeout_ms; /* the deadline; retries is gone */
	o.prefetch = (uint32_t)fw_pg_prefetch;
	o.low_water = (uint32_t)fw_pg_prefetch / 4;
	o.cancel = fw_pg_interrupted;
	rc = fw_client_open((const char *const *)entries, (size_t)n, &o, &c);
	if (rc < 0)
		ereport(ERROR, (errcode(rc == FW_ERESOLVE ? ERRCODE_INVALID_PARAMETER_VALUE
							  : ERRCODE_SYSTEM_ERROR),
				errmsg("flakewire: cannot use flakewire.servers = '%s': %s",
				       fw_pg_servers, fw_strerror(rc))));
	if (!fw_pg_exit_hooked) {
		on_proc_exit(close_client, 0);
		fw_pg_exit_hooked = true;
	}
	fw_pg_client = c;
	fw_pg_client_stale = false;
	while ((rc = fw_client_info(c, &info, NULL)) == -ECANCELED)
		CHECK_FOR_INTERRUPTS();
	/* A new client is tried again from scratch by the next call. */
	if (rc < 0)
		fw_pg_client_stale = true;
	if (rc < 0)
		fleet_error(c, rc, "INFO");
	PG_TRY();
	{
		check_layout(&info);
	}
	PG_CATCH();
	{
		fw_pg_client_stale = true;
		PG_RE_THROW();
	}
	PG_END_TRY();
	return c;
}

/* ---- SQL functions ----------------------------------------------------- */

Datum flakewire_next(PG_FUNCTION_ARGS)
{
	struct fw_client *c = get_client();
	uint64_t id;
	int rc;

	(void)fcinfo;
	while ((rc = fw_client_next(c, &id)) == -ECANCELED)
		CHECK_FOR_INTERRUPTS();
	if (rc < 0)
		fleet_error(c, rc, "an ID request");
	PG_RETURN_INT64((int64)id);
}

Datum flakewire_next_uuid7(PG_FUNCTION_ARGS)
{
	struct fw_client *c = get_client();
	pg_uuid_t *u = palloc(sizeof(*u));
	int rc;

	(void)fcinfo;
	StaticAssertStmt(UUID_LEN == FW_UUID_LEN, "UUID sizes");
	while ((rc = fw_client_next_uuid7(c, u->data)) == -ECANCELED)
		CHECK_FOR_INTERRUPTS();
	if (rc < 0)
		fleet_error(c, rc, "a UUID7 request");
	PG_RETURN_UUID_P(u);
}

static struct fw_id_parts decode_arg(const struct fw_layout *l, int64 id)
{
	struct fw_id_parts p;

	if (id < 0 || fw_layout_decode(l, (uint64_t)id, &p) < 0)
		ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				errmsg("flakewire: " INT64_FORMAT " is not an ID: IDs are 0 to "
				       "2^63-1",
				       id)));
	return p;
}

/* The ID's time as a timestamptz, or an error when it is outside PostgreSQL's range
 * (a layout with a wide time field holds times far beyond year 294276). */
static TimestampTz unix_ms_to_ts(uint64_t unix_ms)
{
	int64 us;
	if (unix_ms > (uint64_t)PG_INT64_MAX ||
	    pg_mul_s64_overflow((int64)unix_ms - FW_PG_EPOCH_UNIX_MS, INT64CONST(1000), &us) ||
	    !IS_VALID_TIMESTAMP(us))
		ereport(ERROR, (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				errmsg("flakewire: the ID's time (unix ms %llu) is outside the "
				       "range of timestamptz",
				       (unsigned long long)unix_ms)));
	return us;
}

Datum flakewire_time(PG_FUNCTION_ARGS)
{
	struct fw_layout l = layout_from_settings();
	struct fw_id_parts p = decode_arg(&l, PG_GETARG_INT64(0));

	PG_RETURN_TIMESTAMPTZ(unix_ms_to_ts(p.unix_ms));
}

Datum flakewire_decode(PG_FUNCTION_ARGS)
{
	struct fw_layout l = layout_from_settings();
	struct fw_id_parts p = decode_arg(&l, PG_GETARG_INT64(0));
	Datum values[4];
	bool nulls[4] = {false, false, false, false};
	TupleDesc td;

	if (get_call_result_type(fcinfo, NULL, &td) != TYPEFUNC_COMPOSITE)
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("flakewire_decode must be called where a record is "
				       "expected")));
	td = BlessTupleDesc(td);
	values[0] = TimestampTzGetDatum(unix_ms_to_ts(p.unix_ms));
	values[1] = Int32GetDatum((int32)p.datacenter);
	values[2] = Int32GetDatum((int32)p.worker);
	values[3] = Int32GetDatum((int32)p.sequence);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(td, values, nulls)));
}

/*
 * The smallest ID whose time is at or after @ts: its millisecond rounded
 * up, datacenter, worker and sequence 0. id >= flakewire_min_id(t) is
 * flakewire_time(id) >= t for every ID of the layout.
 */
Datum flakewire_min_id(PG_FUNCTION_ARGS)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
	struct fw_layout l = layout_from_settings();
	unsigned shift = l.dc_bits + l.worker_bits + l.seq_bits;
	int64 epoch_us, us, ms;

	if (TIMESTAMP_IS_NOBEGIN(ts))
		PG_RETURN_INT64(0);
	epoch_us = ((int64)l.epoch_ms - FW_PG_EPOCH_UNIX_MS) * INT64CONST(1000);
	if (ts <= epoch_us)
		PG_RETURN_INT64(0);
	us = ts - epoch_us;
	ms = us / 1000 + (us % 1000 != 0);
	if (TIMESTAMP_IS_NOEND(ts) || ms >= (INT64CONST(1) << l.time_bits))
		ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("flakewire: %s is after the last millisecond of the layout",
				timestamptz_to_str(ts)),
			 errdetail("flakewire.epoch_ms %s with %u bits of time ends at Unix ms "
				   "%llu.",
				   fw_pg_epoch_ms, l.time_bits,
				   (unsigned long long)fw_layout_end_unix_ms(&l))));
	PG_RETURN_INT64(ms << shift);
}
