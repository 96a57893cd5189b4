/* SPDX-License-Identifier: BSD-3-Clause */
/* Address parsing: "HOST[:PORT]" and bracketed IPv6 to sockaddrs, and the
 * connected socket per server. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_impl.h"

static int parse_port(const char *s, uint16_t *port)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return FW_ERESOLVE;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < 1 || v > 65535)
		return FW_ERESOLVE;
	*port = (uint16_t)v;
	return 0;
}

/* Splits "HOST:PORT", "HOST", "[V6]:PORT", "[V6]" or a bare "V6" into @host and @port. */
static int split_host_port(const char *s, char *host, size_t cap, uint16_t *port)
{
	const char *h = s, *p = NULL;
	size_t hlen;

	*port = FW_WIRE_DEFAULT_PORT;
	if (*s == '[') {
		const char *close = strchr(s, ']');

		if (!close)
			return FW_ERESOLVE;
		h = s + 1;
		hlen = (size_t)(close - h);
		if (close[1] == ':')
			p = close + 2;
		else if (close[1])
			return FW_ERESOLVE;
	} else {
		const char *colon = strchr(s, ':');

		/* More than one colon: an IPv6 address without brackets, no port. */
		if (colon && !strchr(colon + 1, ':')) {
			hlen = (size_t)(colon - s);
			p = colon + 1;
		} else {
			hlen = strlen(s);
		}
	}
	if (hlen == 0 || hlen >= cap)
		return FW_ERESOLVE;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	return p ? parse_port(p, port) : 0;
}

int fwc_resolve(const char *s, struct fw_client_server *srv)
{
	char host[256];
	uint16_t port;
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICHOST};
	struct addrinfo *res = NULL;
	int rc;

	if (!s)
		return FW_ERESOLVE;
	rc = split_host_port(s, host, sizeof(host), &port);
	if (rc < 0)
		return rc;
	/* Numeric first, so an address never goes near DNS. */
	if (getaddrinfo(host, NULL, &hints, &res) != 0) {
		hints.ai_flags = 0;
		if (getaddrinfo(host, NULL, &hints, &res) != 0)
			return FW_ERESOLVE;
	}
	rc = FW_ERESOLVE;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&srv->addr;

			memcpy(sin, ai->ai_addr, sizeof(*sin));
			sin->sin_port = htons(port);
			srv->addrlen = sizeof(*sin);
		} else if (ai->ai_family == AF_INET6) {
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&srv->addr;

			memcpy(sin6, ai->ai_addr, sizeof(*sin6));
			sin6->sin6_port = htons(port);
			srv->addrlen = sizeof(*sin6);
		} else {
			continue;
		}
		rc = 0;
		break;
	}
	freeaddrinfo(res);
	return rc;
}

bool fwc_same_addr(const struct sockaddr_storage *a, const struct fw_client_server *srv)
{
	if (a->ss_family != srv->addr.ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)&srv->addr;

		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)&srv->addr;

		return x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
	}
	return false;
}

/*
 * A socket connected to @srv: the kernel then reports an ICMP port
 * unreachable as ECONNREFUSED (a closed port fails over at once, not after
 * the timeouts). One socket per server keeps waits independent of the
 * others; replies are still matched by source address too.
 * Returns the descriptor or -errno.
 */
int fwc_server_socket(const struct fw_client_server *srv)
{
	int fd = socket(srv->addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)&srv->addr, srv->addrlen) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}
