/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "flakesock.h"
#include "fw_responder_conf.h"
#include "fw_keeper_serve.h"

int fsock_worker_open(struct fsock_ctx *ctx, struct fsock_worker *w)
{
	int one = 1;
	int fd = socket(ctx->listen.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A bounded wait lets the thread see the stop flag without signals. */
	struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
	int v6only = 0; /* "::" serves IPv4 too (as ::ffff:a.b.c.d), whatever bindv6only says */
	/* each datagram's destination: a v4-mapped source is genuine IPv4 only when its
	 * destination is v4-mapped too (fsock_martian6) */
	if ((ctx->listen.ss_family == AF_INET6 &&
	     (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)) < 0 ||
	      setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one)) < 0)) ||
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
	char err[160];

	if (fw_responder_policy(&ctx->policy, &ctx->conf, NULL, NULL, err, sizeof(err))) {
		fprintf(stderr, "flakesock: cannot set up the source policy: %s\n", err);
		return -1;
	}
	return 0;
}

/*
 * The source's verdict under [net] allow, trusted (IPv4 and IPv6 prefixes;
 * an IPv4 peer of a dual-stack socket, ::ffff:a.b.c.d, is an IPv4 source)
 * and reflector_ports, from the worker's cache: FW_POLICY_SRC_* bits, or 0
 * when the datagram is dropped (counted).
 */
/*
 * A martian the kernel delivers to a dual-stack socket (issue 33): an IPv6
 * datagram whose source is v4-mapped (::ffff:127.0.0.1 would otherwise be
 * judged as the trusted IPv4 loopback) but whose destination is a real IPv6
 * address (a genuine IPv4 datagram arrives v4-mapped on both ends), or whose
 * source is unspecified (::). @m the datagram's header with its
 * IPV6_PKTINFO control message.
 */
static bool fsock_martian6(const struct sockaddr_in6 *src, const struct msghdr *m)
{
	if (IN6_IS_ADDR_UNSPECIFIED(&src->sin6_addr))
		return true;
	if (!IN6_IS_ADDR_V4MAPPED(&src->sin6_addr))
		return false;
	for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)m); c != NULL;
	     c = CMSG_NXTHDR((struct msghdr *)m, c)) {
		if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			return !IN6_IS_ADDR_V4MAPPED(&pi.ipi6_addr);
		}
	}
	return false; /* no destination given: an IPv4 socket's, or the kernel's own */
}

static uint32_t admitted(struct fsock_worker *w, const struct sockaddr_storage *ss,
			 const struct msghdr *m)
{
	const struct fw_policy *p = &w->ctx->policy;
	uint16_t sport;
	uint32_t v;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		v = fw_policy_cached(p, &w->srcc, a->sin_addr.s_addr);
		sport = ntohs(a->sin_port);
	} else {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		sport = ntohs(a->sin6_port);
		if (FW_UNLIKELY(fsock_martian6(a, m))) {
			w->drop_martian++;
			return 0;
		}
		if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
			uint32_t be;
			memcpy(&be, &a->sin6_addr.s6_addr[12], 4);
			v = fw_policy_cached(p, &w->srcc, be);
		} else {
			v = fw_policy_cached6(p, &w->srcc, a->sin6_addr.s6_addr);
		}
	}
	if (FW_UNLIKELY(!(v & FW_POLICY_SRC_ALLOWED))) {
		w->drop_source++;
		return 0;
	}
	if (FW_UNLIKELY(fw_policy_reflector(p, sport))) {
		w->drop_reflector++;
		return 0;
	}
	return v;
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
	static __thread union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
	} cmsgs[FSOCK_BATCH];
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
			msgs[i].msg_hdr.msg_control = cmsgs[i].buf;
			msgs[i].msg_hdr.msg_controllen = sizeof(cmsgs[i].buf);
		}
		int n = recvmmsg(w->fd, msgs, FSOCK_BATCH, MSG_WAITFORONE, NULL);
		if (n <= 0)
			continue;

		/* One clock read and one keeper snapshot per batch. */
		struct fw_keeper_snap snap;
		uint64_t now = fw_keeper_serve_burst(&w->kw, &w->serve, fw_responder_worker_ticks(),
						     &snap);

		int k = 0;
		for (int i = 0; i < n; i++) {
			size_t len = msgs[i].msg_len;
			uint32_t v = admitted(w, &peers[i], &msgs[i].msg_hdr);
			if (!v)
				continue;
			/* trusted sources may get replies larger than their requests */
			int rlen = fw_serve_answer(&w->serve, now, bufs[i], len,
						   reply_cap(&peers[i], len),
						   v & FW_POLICY_SRC_TRUSTED);
			if (rlen <= 0)
				continue;
			iov[i].iov_len = (size_t)rlen;
			out[k].msg_hdr = msgs[i].msg_hdr;
			out[k].msg_hdr.msg_control = NULL; /* the kernel picks the source */
			out[k].msg_hdr.msg_controllen = 0;
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
