/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flakewire for MariaDB and MySQL: user-defined functions (UDFs) that take
 * IDs from a flakewire fleet. Manual: doc/mariadb.md.
 *
 *   flakewire_next()          BIGINT: the next ID
 *   flakewire_next_uuid7()    BINARY(16): the next UUIDv7 (RFC 9562 bytes)
 *   flakewire_decode(id)      JSON text, as `flakectl decode --json` prints
 *   flakewire_time(id)        'YYYY-MM-DD HH:MM:SS.mmm' (UTC), for DATETIME(3)
 *   flakewire_last_error()    why this thread's last call failed ('' if none)
 *
 * Settings come from one file the DBA controls (FLAKEWIRE_CONF in the
 * server's environment, else /etc/mysql/flakewire.cnf), read at a
 * statement's start when it changed; a bad setting refuses the statement
 * with a message naming it. One client (lib/client) per server process,
 * shared by every connection (it is thread-safe), prefetching in the
 * background; a replaced client is closed when its last statement ends.
 * Every call is bounded by max_wait_ms (default 1000), the client's per-call
 * deadline (opts.timeout_ms; issue 49, doc/clients.md "Availability"): a UDF
 * cannot see KILL QUERY until it returns. The client's waits also ask a
 * per-thread deadline (opts.cancel), for a caller waiting on a refill that
 * another started. timeout_ms and retries are accepted and no longer used.
 *
 * Only the UDF entry points are exported (-fvisibility=hidden; the static
 * client's own symbols are hidden by --exclude-libs).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <mysql.h> /* my_bool, then mariadb_com.h: UDF_INIT, UDF_ARGS (no libmariadb linked) */

#include "fw_client.h"
#include "fw_err.h"
#include "fw_layout.h"

#define UDF_EXPORT __attribute__((visibility("default")))

#define CONF_DEFAULT_PATH "/etc/mysql/flakewire.cnf"
#define SERVERS_MAX       16
#define ERR_LEN           512
/* opts.cancel's deadline is this much after the client's own (max_wait_ms),
 * a backstop: the client's comes first and says what each responder did. */
#define BACKSTOP_MS       50

struct conf {
	char servers_text[1024];
	char *servers[SERVERS_MAX];
	size_t n_servers;
	uint32_t timeout_ms, retries, max_wait_ms, prefetch, trusted;
	uint64_t epoch_ms;
	uint32_t dc_bits, worker_bits, seq_bits;
	struct fw_layout layout;
};

struct handle {
	struct fw_client *client;
	struct conf conf;
	unsigned refs;
	bool retired;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct handle *cur;
static struct stat cur_st;

static __thread uint64_t deadline_ms;
static __thread char last_error[ERR_LEN];

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The client's waits ask this: give up at the calling thread's deadline. */
static bool past_deadline(void *arg)
{
	(void)arg;
	return deadline_ms != 0 && mono_ms() >= deadline_ms;
}

static const char *conf_path(void)
{
	const char *p = getenv("FLAKEWIRE_CONF");
	return p && *p ? p : CONF_DEFAULT_PATH;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	char *e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

static int set_u64(const char *key, const char *v, uint64_t min, uint64_t max, uint64_t *out,
		   char *msg)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (*v < '0' || *v > '9' || *end != '\0' || errno != 0 || x < min || x > max) {
		/* Short: the server prints about 80 characters of an init message. */
		snprintf(msg, MYSQL_ERRMSG_SIZE,
			 "flakewire: %s = '%.16s': want %" PRIu64 "..%" PRIu64, key, v, min, max);
		return -1;
	}
	*out = x;
	return 0;
}

static int set_u32(const char *key, const char *v, uint32_t min, uint32_t max, uint32_t *out,
		   char *msg)
{
	uint64_t x;
	if (set_u64(key, v, min, max, &x, msg) != 0)
		return -1;
	*out = (uint32_t)x;
	return 0;
}

/* Reads the settings file into *c; 0, or -1 with @msg naming what is wrong. */
static int conf_read(struct conf *c, char *msg)
{
	memset(c, 0, sizeof(*c));
	c->timeout_ms = 100;
	c->retries = 2;
	c->max_wait_ms = 1000;
	c->prefetch = 1024;
	c->epoch_ms = FW_DEFAULT_EPOCH_MS;
	c->dc_bits = 0;
	c->worker_bits = 10;
	c->seq_bits = 12;

	FILE *f = fopen(conf_path(), "re");
	if (f == NULL) {
		snprintf(msg, MYSQL_ERRMSG_SIZE,
			 "flakewire: cannot read the settings file %s (%s); set FLAKEWIRE_CONF "
			 "in the server's environment or create it with servers = HOST:PORT",
			 conf_path(), strerror(errno));
		return -1;
	}
	char line[1100];
	int rc = 0, lineno = 0;
	while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		char *s = trim(line);
		if (*s == '\0' || *s == '#' || *s == ';' || *s == '[')
			continue;
		char *eq = strchr(s, '=');
		if (eq == NULL) {
			snprintf(msg, MYSQL_ERRMSG_SIZE, "flakewire: %s line %d: want KEY = VALUE",
				 conf_path(), lineno);
			rc = -1;
			break;
		}
		*eq = '\0';
		char *k = trim(s), *v = trim(eq + 1);
		if (strcmp(k, "servers") == 0) {
			if (strlen(v) >= sizeof(c->servers_text)) {
				snprintf(msg, MYSQL_ERRMSG_SIZE,
					 "flakewire: servers in %s too long", conf_path());
				rc = -1;
				break;
			}
			strcpy(c->servers_text, v);
		} else if (strcmp(k, "timeout_ms") == 0)
			rc = set_u32(k, v, 1, 60000, &c->timeout_ms, msg);
		else if (strcmp(k, "retries") == 0)
			rc = set_u32(k, v, 0, FW_CLIENT_RETRIES_MAX, &c->retries, msg);
		else if (strcmp(k, "max_wait_ms") == 0)
			rc = set_u32(k, v, 10, 60000, &c->max_wait_ms, msg);
		else if (strcmp(k, "prefetch") == 0)
			rc = set_u32(k, v, 1, FW_CLIENT_PREFETCH_MAX, &c->prefetch, msg);
		else if (strcmp(k, "trusted") == 0)
			rc = set_u32(k, v, 0, 1, &c->trusted, msg);
		else if (strcmp(k, "epoch_ms") == 0)
			rc = set_u64(k, v, 0, (UINT64_C(1) << 42) - 1, &c->epoch_ms, msg);
		else if (strcmp(k, "datacenter_bits") == 0)
			rc = set_u32(k, v, 0, 31, &c->dc_bits, msg);
		else if (strcmp(k, "worker_bits") == 0)
			rc = set_u32(k, v, 0, 31, &c->worker_bits, msg);
		else if (strcmp(k, "sequence_bits") == 0)
			rc = set_u32(k, v, 0, 31, &c->seq_bits, msg);
		else {
			snprintf(msg, MYSQL_ERRMSG_SIZE,
				 "flakewire: unknown setting '%s' in %s (known: servers, "
				 "timeout_ms, "
				 "retries, max_wait_ms, prefetch, trusted, epoch_ms, "
				 "datacenter_bits, "
				 "worker_bits, sequence_bits)",
				 k, conf_path());
			rc = -1;
		}
	}
	fclose(f);
	if (rc != 0)
		return rc;
	for (char *save = NULL, *t = strtok_r(c->servers_text, ", ", &save); t != NULL;
	     t = strtok_r(NULL, ", ", &save)) {
		if (c->n_servers == SERVERS_MAX) {
			snprintf(msg, MYSQL_ERRMSG_SIZE, "flakewire: servers in %s: at most %d",
				 conf_path(), SERVERS_MAX);
			return -1;
		}
		c->servers[c->n_servers++] = t;
	}
	if (c->n_servers == 0) {
		snprintf(msg, MYSQL_ERRMSG_SIZE,
			 "flakewire: servers missing in %s (servers = HOST:PORT[, HOST:PORT...])",
			 conf_path());
		return -1;
	}
	int lrc =
		fw_layout_init(&c->layout, c->epoch_ms, c->dc_bits, c->worker_bits, c->seq_bits, 0);
	if (lrc != 0) {
		snprintf(msg, MYSQL_ERRMSG_SIZE,
			 "flakewire: epoch_ms = %" PRIu64
			 ", datacenter_bits = %u, worker_bits = %u, "
			 "sequence_bits = %u in %s are not a layout: %s",
			 c->epoch_ms, c->dc_bits, c->worker_bits, c->seq_bits, conf_path(),
			 fw_strerror(lrc));
		return -1;
	}
	return 0;
}

static void handle_free(struct handle *h)
{
	fw_client_close(h->client);
	free(h);
}

/*
 * The module is unloaded (DROP FUNCTION, server shutdown): the client's
 * threads (the refiller, and the probe thread that a silent responder keeps
 * running) run this module's code, so the client is closed first.
 */
__attribute__((destructor)) static void udf_unload(void)
{
	pthread_mutex_lock(&mu);
	if (cur != NULL && cur->refs == 0) {
		handle_free(cur);
		cur = NULL;
	} else if (cur != NULL) {
		fw_client_shutdown(cur->client);
	}
	pthread_mutex_unlock(&mu);
}

/* The current client, reloaded when the file changed; NULL with @msg set. */
static struct handle *acquire(char *msg)
{
	struct stat st;
	pthread_mutex_lock(&mu);
	bool have = stat(conf_path(), &st) == 0;
	if (cur == NULL || !have || st.st_ino != cur_st.st_ino || st.st_dev != cur_st.st_dev ||
	    st.st_size != cur_st.st_size || st.st_mtim.tv_sec != cur_st.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != cur_st.st_mtim.tv_nsec) {
		struct handle *h = calloc(1, sizeof(*h));
		if (h == NULL) {
			snprintf(msg, MYSQL_ERRMSG_SIZE, "flakewire: out of memory");
			pthread_mutex_unlock(&mu);
			return NULL;
		}
		if (conf_read(&h->conf, msg) != 0) {
			free(h);
			pthread_mutex_unlock(&mu);
			return NULL;
		}
		struct fw_client_opts o;
		fw_client_opts_init(&o);
		o.timeout_ms = h->conf.max_wait_ms; /* the deadline (timeout_ms, retries: unused) */
		o.prefetch = h->conf.prefetch;
		o.low_water = h->conf.prefetch / 4 ? h->conf.prefetch / 4 : 1;
		o.trusted = h->conf.trusted != 0;
		o.cancel = past_deadline;
		int rc = fw_client_open((const char *const *)h->conf.servers, h->conf.n_servers, &o,
					&h->client);
		if (rc != 0) {
			snprintf(msg, MYSQL_ERRMSG_SIZE, "flakewire: servers = '%s' in %s: %s",
				 h->conf.servers[0], conf_path(), fw_strerror(rc));
			free(h);
			pthread_mutex_unlock(&mu);
			return NULL;
		}
		if (cur != NULL) {
			cur->retired = true;
			if (cur->refs == 0)
				handle_free(cur);
		}
		cur = h;
		cur_st = st;
	}
	cur->refs++;
	struct handle *h = cur;
	pthread_mutex_unlock(&mu);
	return h;
}

static void release(struct handle *h)
{
	if (h == NULL)
		return;
	pthread_mutex_lock(&mu);
	if (--h->refs == 0 && h->retired)
		handle_free(h);
	pthread_mutex_unlock(&mu);
}

static bool init_common(UDF_INIT *initid, UDF_ARGS *args, unsigned nargs, const char *name,
			char *message)
{
	if (args->arg_count != nargs) {
		snprintf(message, MYSQL_ERRMSG_SIZE, "%s takes %u argument%s", name, nargs,
			 nargs == 1 ? "" : "s");
		return true;
	}
	if (nargs == 1)
		args->arg_type[0] = INT_RESULT;
	struct handle *h = acquire(message);
	if (h == NULL)
		return true;
	initid->ptr = (char *)h;
	initid->const_item = 0;
	return false;
}

static void fail(struct handle *h, const char *what, int rc)
{
	char did[ERR_LEN] = "";

	if (rc == FW_ETIMEOUT)
		fw_client_last_error(h->client, did, sizeof(did));
	if (rc == FW_ETIMEOUT || rc == -ECANCELED)
		snprintf(last_error, sizeof(last_error),
			 "flakewire: no %s within max_wait_ms = %u ms (%s)", what,
			 h->conf.max_wait_ms, did[0] ? did : h->conf.servers[0]);
	else
		snprintf(last_error, sizeof(last_error), "flakewire: no %s: %s (servers %s...)",
			 what, fw_strerror(rc), h->conf.servers[0]);
}

/* ---- flakewire_next() ---- */

UDF_EXPORT my_bool flakewire_next_init(UDF_INIT *initid, UDF_ARGS *args, char *message);
UDF_EXPORT void flakewire_next_deinit(UDF_INIT *initid);
UDF_EXPORT long long flakewire_next(UDF_INIT *initid, UDF_ARGS *args, char *is_null, char *error);

my_bool flakewire_next_init(UDF_INIT *initid, UDF_ARGS *args, char *message)
{
	if (init_common(initid, args, 0, "flakewire_next()", message))
		return 1;
	initid->maybe_null = 1; /* NULL (and flakewire_last_error()) when the fleet fails */
	return 0;
}

void flakewire_next_deinit(UDF_INIT *initid)
{
	release((struct handle *)initid->ptr);
}

long long flakewire_next(UDF_INIT *initid, UDF_ARGS *args, char *is_null, char *error)
{
	(void)args;
	struct handle *h = (struct handle *)initid->ptr;
	uint64_t id;
	deadline_ms = mono_ms() + h->conf.max_wait_ms + BACKSTOP_MS;
	int rc = fw_client_next(h->client, &id);
	deadline_ms = 0;
	if (rc != 0) {
		fail(h, "ID", rc);
		*is_null = 1;
		*error = 1;
		return 0;
	}
	last_error[0] = '\0';
	return (long long)id;
}

/* ---- flakewire_next_uuid7() ---- */

UDF_EXPORT my_bool flakewire_next_uuid7_init(UDF_INIT *initid, UDF_ARGS *args, char *message);
UDF_EXPORT void flakewire_next_uuid7_deinit(UDF_INIT *initid);
UDF_EXPORT char *flakewire_next_uuid7(UDF_INIT *initid, UDF_ARGS *args, char *result,
				      unsigned long *length, char *is_null, char *error);

my_bool flakewire_next_uuid7_init(UDF_INIT *initid, UDF_ARGS *args, char *message)
{
	if (init_common(initid, args, 0, "flakewire_next_uuid7()", message))
		return 1;
	initid->maybe_null = 1;
	initid->max_length = FW_UUID_LEN;
	return 0;
}

void flakewire_next_uuid7_deinit(UDF_INIT *initid)
{
	release((struct handle *)initid->ptr);
}

char *flakewire_next_uuid7(UDF_INIT *initid, UDF_ARGS *args, char *result, unsigned long *length,
			   char *is_null, char *error)
{
	(void)args;
	struct handle *h = (struct handle *)initid->ptr;
	deadline_ms = mono_ms() + h->conf.max_wait_ms + BACKSTOP_MS;
	int rc = fw_client_next_uuid7(h->client, (uint8_t *)result);
	deadline_ms = 0;
	if (rc != 0) {
		fail(h, "UUIDv7", rc);
		*is_null = 1;
		*error = 1;
		return NULL;
	}
	last_error[0] = '\0';
	*length = FW_UUID_LEN;
	return result;
}

/* ---- flakewire_decode(id), flakewire_time(id) ---- */

static bool decode_arg(UDF_INIT *initid, UDF_ARGS *args, struct fw_id_parts *p)
{
	struct handle *h = (struct handle *)initid->ptr;
	if (args->args[0] == NULL)
		return false;
	long long id = *(long long *)args->args[0];
	return id >= 0 && fw_layout_decode(&h->conf.layout, (uint64_t)id, p) == 0;
}

static void iso_ms(uint64_t unix_ms, char *out, size_t len, bool sql)
{
	time_t s = (time_t)(unix_ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	snprintf(out, len,
		 sql ? "%04d-%02d-%02d %02d:%02d:%02d.%03u" : "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned)(unix_ms % 1000));
}

UDF_EXPORT my_bool flakewire_decode_init(UDF_INIT *initid, UDF_ARGS *args, char *message);
UDF_EXPORT void flakewire_decode_deinit(UDF_INIT *initid);
UDF_EXPORT char *flakewire_decode(UDF_INIT *initid, UDF_ARGS *args, char *result,
				  unsigned long *length, char *is_null, char *error);

my_bool flakewire_decode_init(UDF_INIT *initid, UDF_ARGS *args, char *message)
{
	if (init_common(initid, args, 1, "flakewire_decode(id)", message))
		return 1;
	initid->maybe_null = 1; /* NULL for NULL or a negative id */
	initid->max_length = 200;
	return 0;
}

void flakewire_decode_deinit(UDF_INIT *initid)
{
	release((struct handle *)initid->ptr);
}

char *flakewire_decode(UDF_INIT *initid, UDF_ARGS *args, char *result, unsigned long *length,
		       char *is_null, char *error)
{
	(void)error;
	struct fw_id_parts p;
	if (!decode_arg(initid, args, &p)) {
		*is_null = 1;
		return NULL;
	}
	char t[40];
	iso_ms(p.unix_ms, t, sizeof(t), false);
	int n = snprintf(result, 255,
			 "{\"id\":\"%llu\",\"time\":\"%s\",\"unix_ms\":%" PRIu64
			 ",\"datacenter\":%u,\"worker\":%u,\"sequence\":%u}",
			 (unsigned long long)*(long long *)args->args[0], t, p.unix_ms,
			 p.datacenter, p.worker, p.sequence);
	*length = (unsigned long)(n < 255 ? n : 254);
	return result;
}

UDF_EXPORT my_bool flakewire_time_init(UDF_INIT *initid, UDF_ARGS *args, char *message);
UDF_EXPORT void flakewire_time_deinit(UDF_INIT *initid);
UDF_EXPORT char *flakewire_time(UDF_INIT *initid, UDF_ARGS *args, char *result,
				unsigned long *length, char *is_null, char *error);

my_bool flakewire_time_init(UDF_INIT *initid, UDF_ARGS *args, char *message)
{
	if (init_common(initid, args, 1, "flakewire_time(id)", message))
		return 1;
	initid->maybe_null = 1;
	initid->max_length = 32;
	return 0;
}

void flakewire_time_deinit(UDF_INIT *initid)
{
	release((struct handle *)initid->ptr);
}

char *flakewire_time(UDF_INIT *initid, UDF_ARGS *args, char *result, unsigned long *length,
		     char *is_null, char *error)
{
	(void)error;
	struct fw_id_parts p;
	if (!decode_arg(initid, args, &p) || p.unix_ms > UINT64_C(253402300799999)) {
		*is_null = 1; /* NULL for NULL, a negative id, or past year 9999 */
		return NULL;
	}
	iso_ms(p.unix_ms, result, 255, true);
	*length = (unsigned long)strlen(result);
	return result;
}

/* ---- flakewire_last_error() ---- */

UDF_EXPORT my_bool flakewire_last_error_init(UDF_INIT *initid, UDF_ARGS *args, char *message);
UDF_EXPORT char *flakewire_last_error(UDF_INIT *initid, UDF_ARGS *args, char *result,
				      unsigned long *length, char *is_null, char *error);

my_bool flakewire_last_error_init(UDF_INIT *initid, UDF_ARGS *args, char *message)
{
	if (args->arg_count != 0) {
		snprintf(message, MYSQL_ERRMSG_SIZE, "flakewire_last_error() takes no arguments");
		return 1;
	}
	initid->maybe_null = 0;
	initid->const_item = 0;
	initid->max_length = ERR_LEN;
	return 0;
}

char *flakewire_last_error(UDF_INIT *initid, UDF_ARGS *args, char *result, unsigned long *length,
			   char *is_null, char *error)
{
	(void)initid;
	(void)args;
	(void)result;
	(void)is_null;
	(void)error;
	*length = (unsigned long)strlen(last_error);
	return last_error;
}
