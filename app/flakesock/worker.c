/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "flakesock.h"
#include "fw_keeper_serve.h"

uint64_t fsock_unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int fsock_worker_open(struct fsock_ctx *ctx, struct fsock_worker *w)
{
	int one = 1;
	int fd = socket(ctx->listen.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A bounded wait lets the thread see the stop flag without signals. */
	struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
	int v6only = 0; /* "::" serves IPv4 too (as ::ffff:a.b.c.d), whatever bindv6only says */
	if ((ctx->listen.ss_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)) < 0) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    bind(fd, (const struct sockaddr *)&ctx->listen, ctx->listen_len) < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	w->fd = fd;
	return 0;
}

int fsock_policy_init(struct fsock_ctx *ctx)
{
	const struct fw_conf *c = &ctx->conf;
	struct fw_policy_prefix allow[FW_POLICY_PREFIXES_MAX];
	uint16_t ports[FW_CONF_LIST_MAX];

	_Static_assert(FW_CONF_CIDRS_MAX <= FW_POLICY_PREFIXES_MAX, "allow list too long");
	for (uint32_t i = 0; i < c->net.allow.n; i++) {
		allow[i].addr = c->net.allow.v[i].addr;
		allow[i].mask = c->net.allow.v[i].mask;
	}
	for (uint32_t i = 0; i < c->net.reflector_ports.n; i++)
		ports[i] = (uint16_t)c->net.reflector_ports.v[i];
	struct fw_policy_prefix6 allow6[FW_POLICY_PREFIXES_MAX];
	for (uint32_t i = 0; i < c->net.allow.n6; i++) {
		allow6[i].hi = c->net.allow.v6[i].hi;
		allow6[i].lo = c->net.allow.v6[i].lo;
		allow6[i].mhi = c->net.allow.v6[i].mhi;
		allow6[i].mlo = c->net.allow.v6[i].mlo;
	}
	if (fw_policy_init(&ctx->policy, allow, c->net.allow.n, ports, c->net.reflector_ports.n) ||
	    fw_policy_set_allow6(&ctx->policy, allow6, c->net.allow.n6)) {
		fprintf(stderr, "flakesock: cannot set up the source policy\n");
		return -1;
	}
	return 0;
}

/*
 * The source policy of [net] allow (IPv4 and IPv6 prefixes; an IPv4 peer of
 * a dual-stack socket, ::ffff:a.b.c.d, is an IPv4 source) and [net]
 * reflector_ports. Counts what it drops.
 */
static bool admitted(struct fsock_worker *w, const struct sockaddr_storage *ss)
{
	const struct fw_policy *p = &w->ctx->policy;
	uint16_t sport;
	uint32_t v4;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		v4 = ntohl(a->sin_addr.s_addr);
		sport = ntohs(a->sin_port);
	} else {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		sport = ntohs(a->sin6_port);
		if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
			memcpy(&v4, &a->sin6_addr.s6_addr[12], 4);
			v4 = ntohl(v4);
		} else {
			if (!fw_policy_allowed6(p, a->sin6_addr.s6_addr)) {
				w->drop_source++;
				return false;
			}
			if (fw_policy_reflector(p, sport)) {
				w->drop_reflector++;
				return false;
			}
			return true;
		}
	}
	switch (fw_policy_check(p, v4, sport)) {
	case FW_POLICY_DENY_SOURCE:
		w->drop_source++;
		return false;
	case FW_POLICY_DENY_PORT:
		w->drop_reflector++;
		return false;
	default:
		return true;
	}
}

/* Trusted sources may get replies larger than their requests. */
static bool trusted(const struct fsock_ctx *ctx, const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		return fw_conf_trusted(&ctx->conf.net.trusted, ntohl(a->sin_addr.s_addr));
	}
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			uint32_t v4;
			memcpy(&v4, &a->s6_addr[12], 4);
			return fw_conf_trusted(&ctx->conf.net.trusted, ntohl(v4));
		}
		return fw_conf_trusted6(&ctx->conf.net.trusted, a->s6_addr);
	}
	return false;
}

/* Largest reply to an IPv6 peer: the UDP payload of a 1500-byte IPv6 packet. */
#define FSOCK_IPV6_PAYLOAD_MAX 1452

/* Reply room: one unfragmented datagram of the peer's family (IPv6: 1452 bytes). */
static size_t reply_cap(const struct sockaddr_storage *ss, size_t len)
{
	if (ss->ss_family == AF_INET6 &&
	    !IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)ss)->sin6_addr))
		return FW_MAX(len, (size_t)FSOCK_IPV6_PAYLOAD_MAX);
	return FSOCK_BUF_LEN;
}

void *fsock_worker_run(void *arg)
{
	struct fsock_worker *w = arg;
	struct fsock_ctx *ctx = w->ctx;
	static __thread uint8_t bufs[FSOCK_BATCH][FSOCK_BUF_LEN];
	struct sockaddr_storage peers[FSOCK_BATCH];
	struct iovec iov[FSOCK_BATCH];
	struct mmsghdr msgs[FSOCK_BATCH], out[FSOCK_BATCH];

	while (!*ctx->stop) {
		for (int i = 0; i < FSOCK_BATCH; i++) {
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = FSOCK_BUF_LEN;
			memset(&msgs[i].msg_hdr, 0, sizeof(msgs[i].msg_hdr));
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
			msgs[i].msg_hdr.msg_name = &peers[i];
			msgs[i].msg_hdr.msg_namelen = sizeof(peers[i]);
		}
		int n = recvmmsg(w->fd, msgs, FSOCK_BATCH, MSG_WAITFORONE, NULL);
		if (n <= 0)
			continue;

		/* One clock read and one keeper snapshot per batch. */
		struct fw_keeper_snap snap;
		uint64_t now =
			fw_keeper_serve_burst(&w->kw, &w->serve, fw_keeper_monoraw_ticks(), &snap);

		int k = 0;
		for (int i = 0; i < n; i++) {
			size_t len = msgs[i].msg_len;
			if (!admitted(w, &peers[i]))
				continue;
			int rlen =
				fw_serve_answer(&w->serve, now, bufs[i], len,
						reply_cap(&peers[i], len), trusted(ctx, &peers[i]));
			if (rlen <= 0)
				continue;
			iov[i].iov_len = (size_t)rlen;
			out[k].msg_hdr = msgs[i].msg_hdr;
			out[k].msg_len = 0;
			k++;
		}
		for (int sent = 0; sent < k;) {
			int r = sendmmsg(w->fd, out + sent, (unsigned)(k - sent), 0);
			if (r <= 0)
				break; /* a reply lost here wastes IDs, never duplicates them */
			sent += r;
		}
	}
	return NULL;
}
