/* SPDX-License-Identifier: BSD-3-Clause */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "client_args.h"
#include "flakectl.h"
#include "fw_err.h"

static const struct {
	uint8_t bit;
	const char *word;
} flag_words[] = {
	{FW_WIRE_F_BORROWED, "borrowed"}, {FW_WIRE_F_BACKSTEP, "backstep"},
	{FW_WIRE_F_UNSAFE, "unsafe"},     {FW_WIRE_F_SLEWING, "slewing"},
	{FW_WIRE_F_PARTIAL, "partial"},
};

void client_args_init(struct client_args *ca)
{
	memset(ca, 0, sizeof(*ca));
	ca->timeout_ms = CLIENT_ARGS_TIMEOUT_DEF;
}

/*
 * A bracketless IPv6 address is refused (true, the error printed naming the
 * form to use): "::1:4246" is itself an address (0::1:4246, port 4242), so a
 * port written after a bare address would silently go elsewhere.
 */
static bool bare_ipv6(const char *cmd, const char *val)
{
	const char *first = strchr(val, ':'), *last = strrchr(val, ':');
	char *end;

	if (val[0] == '[' || first == NULL || first == last)
		return false; /* bracketed, a host name, or HOST:PORT */
	unsigned long port = last[1] >= '0' && last[1] <= '9' ? strtoul(last + 1, &end, 10) : 0;
	char addr[INET6_ADDRSTRLEN + 1];
	struct in6_addr a6;
	size_t alen = (size_t)(last - val);
	bool split = port >= 1 && port <= 65535 && *end == '\0' && alen < sizeof(addr);
	if (split) { /* what comes before the last colon must be an address itself */
		memcpy(addr, val, alen);
		addr[alen] = '\0';
		split = inet_pton(AF_INET6, addr, &a6) == 1;
	}
	if (split)
		fc_err(cmd,
		       "--server %s: an IPv6 address needs brackets: [%.*s]:%lu for port %lu "
		       "of %.*s, or [%s] for the address %s (port %d)",
		       val, (int)(last - val), val, port, port, (int)(last - val), val, val, val,
		       FW_WIRE_DEFAULT_PORT);
	else
		fc_err(cmd, "--server %s: an IPv6 address needs brackets: [%s] or [%s]:PORT", val,
		       val, val);
	return true;
}

int client_args_parse(struct client_args *ca, int argc, char **argv, int *i)
{
	const char *val;
	int m;

	if (!strcmp(argv[*i], "--trusted")) {
		ca->trusted = true;
		return 1;
	}
	m = fc_opt_u64(argc, argv, i, "--timeout", CLIENT_ARGS_TIMEOUT_MIN, CLIENT_ARGS_TIMEOUT_MAX,
		       &ca->timeout_ms);
	if (m != 0)
		return m;
	m = fc_opt_value(argc, argv, i, "--server", &val);
	if (m <= 0)
		return m;
	if (*val == '\0') {
		fc_err(argv[0], "--server: empty, expected HOST:PORT");
		return -1;
	}
	if (bare_ipv6(argv[0], val))
		return -1;
	if (ca->n == CLIENT_ARGS_SERVERS_MAX) {
		fc_err(argv[0], "--server %s: too many servers (at most %d)", val,
		       CLIENT_ARGS_SERVERS_MAX);
		return -1;
	}
	ca->servers[ca->n++] = val;
	return 1;
}

void client_args_finish(struct client_args *ca)
{
	if (ca->n == 0)
		ca->servers[ca->n++] = CLIENT_ARGS_DEFAULT;
}

int client_args_open(const struct client_args *ca, size_t first, size_t n, const char *cmd,
		     struct fw_client **out)
{
	struct fw_client_opts o;
	int rc;

	fw_client_opts_init(&o);
	o.timeout_ms = (uint32_t)ca->timeout_ms; /* the call's deadline */
	o.trusted = ca->trusted;
	rc = fw_client_open(ca->servers + first, n, &o, out);
	if (rc == 0)
		return FC_EXIT_OK;
	if (rc != FW_ERESOLVE) {
		fc_err(cmd, "cannot open a client: %s", fw_strerror(rc));
		return FC_EXIT_FAIL;
	}
	/* The library does not say which address failed: try them one by one. */
	for (size_t k = first; k < first + n; k++) {
		struct fw_client *c;

		if (fw_client_open(ca->servers + k, 1, &o, &c) == 0) {
			fw_client_close(c);
			continue;
		}
		fc_err(cmd, "--server %s: %s (expected HOST:PORT, HOST, [IPV6]:PORT)",
		       ca->servers[k], fw_strerror(FW_ERESOLVE));
		return FC_EXIT_USAGE;
	}
	fc_err(cmd, "--server: %s", fw_strerror(FW_ERESOLVE));
	return FC_EXIT_USAGE;
}

int client_args_resolve(const char *server, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM};
	struct addrinfo *res = NULL;
	const char *h = server, *p = NULL, *colon = strchr(server, ':');
	char host[256], *end;
	unsigned long port = FW_WIRE_DEFAULT_PORT;
	size_t hlen = strlen(server);
	int rc = FW_ERESOLVE;

	if (*server == '[') {
		const char *close = strchr(server, ']');

		if (!close || (close[1] && close[1] != ':'))
			return FW_ERESOLVE;
		h = server + 1;
		hlen = (size_t)(close - h);
		p = close[1] ? close + 2 : NULL;
	} else if (colon && !strchr(colon + 1, ':')) {
		/* One colon: HOST:PORT; more: a bare IPv6 address. */
		hlen = (size_t)(colon - server);
		p = colon + 1;
	}
	if (hlen == 0 || hlen >= sizeof(host))
		return FW_ERESOLVE;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (p) {
		if (*p < '0' || *p > '9')
			return FW_ERESOLVE;
		port = strtoul(p, &end, 10);
		if (*end || port < 1 || port > 65535)
			return FW_ERESOLVE;
	}
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return FW_ERESOLVE;
	for (struct addrinfo *ai = res; ai && rc < 0; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET) {
			struct sockaddr_in *sin = (struct sockaddr_in *)ss;

			memcpy(sin, ai->ai_addr, sizeof(*sin));
			sin->sin_port = htons((uint16_t)port);
			*len = sizeof(*sin);
			rc = 0;
		} else if (ai->ai_family == AF_INET6) {
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

			memcpy(sin6, ai->ai_addr, sizeof(*sin6));
			sin6->sin6_port = htons((uint16_t)port);
			*len = sizeof(*sin6);
			rc = 0;
		}
	}
	freeaddrinfo(res);
	return rc;
}

void client_args_help(FILE *f, enum client_args_mode mode)
{
	if (mode == CLIENT_ARGS_BENCH)
		fprintf(f,
			"  --server HOST:PORT    responder to load (default " CLIENT_ARGS_DEFAULT
			");\n"
			"                        repeat it to spread the threads over several;\n"
			"                        IPv6 in brackets: [2001:db8::5]:4242 (a bare\n"
			"                        IPv6 address is refused); families may be mixed\n"
			"  --timeout MS          wait for each reply, %d-%d (default %d); a "
			"request\n"
			"                        not answered by then counts as a timeout (the\n"
			"                        first INFO, for the layout, waits at least 3 s)\n",
			CLIENT_ARGS_TIMEOUT_MIN, CLIENT_ARGS_TIMEOUT_MAX, CLIENT_ARGS_TIMEOUT_DEF);
	else
		fprintf(f,
			"  --server HOST:PORT    responder to ask (default " CLIENT_ARGS_DEFAULT
			");\n"
			"                        repeat it to fail over in order (IPv4 and IPv6\n"
			"                        mixed; IPv6 in brackets: [2001:db8::5]:4242)\n"
			"  --timeout MS          the request's deadline, %d-%d (default %d): it\n"
			"                        is answered or fails within MS ms; a silent\n"
			"                        responder is left for the next after a few ms\n"
			"                        (hedged), one that answers RETRY_AFTER or\n"
			"                        refuses is asked again until then\n",
			CLIENT_ARGS_TIMEOUT_MIN, CLIENT_ARGS_TIMEOUT_MAX, CLIENT_ARGS_TIMEOUT_DEF);
	fprintf(f, "  --trusted             do not pad requests (only for a responder that trusts\n"
		   "                        this host; an untrusted one answers fewer IDs)\n");
}

void client_args_report(const struct client_args *ca, const char *cmd, struct fw_client *c, int rc)
{
	char what[512];

	if (rc == FW_ESTATUS) {
		uint8_t st = fw_client_last_status(c);
		struct fw_wire_hdr h;

		if (fw_client_last_hdr(c, &h) == 0)
			fc_err(cmd, "responder (datacenter %u, worker %u) answered '%s'",
			       h.datacenter, h.worker, fw_wire_status_name(st));
		else
			fc_err(cmd, "responder answered '%s'", fw_wire_status_name(st));
		return;
	}
	if (rc != FW_ETIMEOUT) {
		fc_err(cmd, "%s", fw_strerror(rc));
		return;
	}
	fw_client_last_error(c, what, sizeof(what));
	/* The advice only where a responder stayed silent. */
	fc_err(cmd, "no usable reply within %" PRIu64 " ms: %s%s", ca->timeout_ms, what,
	       strstr(what, "no reply") ? " (is a responder running there, and does its [net] "
					  "allow admit this host? A dropped source is counted as "
					  "flakewire_drops_total{reason=\"source\"})"
					: "");
}

int client_args_layout(const struct fw_wire_info *info, struct fw_layout *l)
{
	struct fw_layout x = {
		.epoch_ms = info->epoch_ms,
		.time_bits = info->time_bits,
		.dc_bits = info->dc_bits,
		.worker_bits = info->worker_bits,
		.seq_bits = info->seq_bits,
	};
	int rc = fw_layout_validate(&x, 0);

	if (rc == 0)
		*l = x;
	return rc;
}

static void flags_join(uint8_t flags, char *buf, size_t cap, const char *sep, const char *quote,
		       const char *none)
{
	size_t used = 0;
	bool any = false;

	buf[0] = '\0';
	for (size_t k = 0; k < FW_ARRAY_SIZE(flag_words); k++) {
		int w;

		if (!(flags & flag_words[k].bit))
			continue;
		w = snprintf(buf + used, cap - used, "%s%s%s%s", any ? sep : "", quote,
			     flag_words[k].word, quote);
		if (w < 0 || (size_t)w >= cap - used)
			return;
		used += (size_t)w;
		any = true;
	}
	if (!any)
		snprintf(buf, cap, "%s", none);
}

void client_args_flag_words(uint8_t flags, char *buf, size_t cap)
{
	flags_join(flags, buf, cap, ", ", "", "none");
}

void client_args_flag_json(uint8_t flags, char *buf, size_t cap)
{
	char inner[128];

	flags_join(flags, inner, sizeof(inner), ",", "\"", "");
	snprintf(buf, cap, "[%s]", inner);
}
