/* SPDX-License-Identifier: BSD-3-Clause */
/* The client's life: options, fw_client_open(), shutdown and close. */
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_impl.h"

void fw_client_opts_init(struct fw_client_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->timeout_ms = 1000;
	o->retries = 3; /* no longer used */
	o->prefetch = 1024;
	o->low_water = 256;
	o->trusted = false;
	o->use_range = true;
	o->max_age_ms = 1000;
	o->hedge_min_us = 2000;
	o->hedge_budget_pct = 5;
}

static int opts_copy(struct fw_client_opts *dst, const struct fw_client_opts *src)
{
	fw_client_opts_init(dst);
	if (!src)
		return 0;
	if (src->size < sizeof(src->size))
		return -EINVAL;
	if (src->size > sizeof(*dst)) {
		const uint8_t *tail = (const uint8_t *)src + sizeof(*dst);

		for (size_t i = 0; i < src->size - sizeof(*dst); i++)
			if (tail[i])
				return -E2BIG;
	}
	memcpy(dst, src, FW_MIN(src->size, sizeof(*dst)));
	dst->size = sizeof(*dst);

	/* retries is accepted and ignored: the deadline bounds a call. */
	if (dst->timeout_ms < 1 || dst->timeout_ms > FW_CLIENT_TIMEOUT_MS_MAX ||
	    dst->hedge_min_us > FW_CLIENT_HEDGE_MIN_US_MAX ||
	    dst->hedge_budget_pct > FW_CLIENT_HEDGE_BUDGET_PCT_MAX || dst->prefetch < 1 ||
	    dst->prefetch > FW_CLIENT_PREFETCH_MAX || dst->low_water > FW_CLIENT_PREFETCH_MAX ||
	    dst->max_age_ms < FW_CLIENT_MAX_AGE_MS_MIN ||
	    dst->max_age_ms > FW_CLIENT_MAX_AGE_MS_MAX)
		return -EINVAL;
	return 0;
}

int fw_client_open(const char *const *servers, size_t n, const struct fw_client_opts *opts,
		   struct fw_client **out)
{
	struct fw_client *c;
	int rc;

	if (!servers || !n || !out)
		return -EINVAL;
	/* A forked child must not hand out its parent's buffered IDs: without
	 * the fork handlers there is no client. */
	rc = fwc_fork_register();
	if (rc < 0)
		return rc;
	/* sizeof(*c) is a multiple of its 64-byte alignment */
	c = aligned_alloc(alignof(struct fw_client), sizeof(*c));
	if (!c)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	rc = opts_copy(&c->opts, opts);
	if (rc < 0)
		goto err_free;
	c->srv = calloc(n, sizeof(*c->srv));
	if (!c->srv) {
		rc = -ENOMEM;
		goto err_free;
	}
	for (size_t i = 0; i < n; i++)
		c->srv[i].fd = -1;
	c->nsrv = n;
	rc = fwc_route_init(&c->route, c->srv, n, c->opts.hedge_min_us, c->opts.hedge_budget_pct);
	if (rc < 0)
		goto err_close;
	for (size_t i = 0; i < n; i++) {
		rc = fwc_resolve(servers[i], &c->srv[i]);
		if (rc < 0)
			goto err_close;
		c->ipv6 |= c->srv[i].addr.ss_family == AF_INET6;
		rc = fwc_server_socket(&c->srv[i]);
		if (rc < 0)
			goto err_close;
		c->srv[i].fd = rc;
	}

	/*
	 * Refills start below low_water (each range holds at least one ID)
	 * and add at most prefetch IDs, plus one reply's worth of ranges.
	 * The UUID buffer is allocated on first use.
	 */
	rc = fwc_pf_init(&c->pf, &c->pf_io, n);
	if (rc == 0)
		rc = fwc_pf_init(&c->upf, &c->upf_io, n);
	if (rc < 0)
		goto err_close;
	c->pf.cap = 64;
	c->pf.pr = calloc(c->pf.cap, sizeof(*c->pf.pr));
	if (!c->pf.pr) {
		rc = -ENOMEM;
		goto err_close;
	}
	c->pf_want = c->opts.prefetch;
	c->pf_low = c->opts.low_water;
	c->tick_ns = (uint64_t)c->opts.max_age_ms * NS_PER_MS / FW_CLIENT_AGE_TICKS;
	fwc_pf_refiller_io(c);
	rc = -pthread_mutex_init(&c->lock, NULL);
	if (rc == 0) {
		rc = -pthread_mutex_init(&c->call_lock, NULL);
		if (rc < 0)
			pthread_mutex_destroy(&c->lock);
	}
	if (rc == 0) {
		rc = -fw_cond_init_mono(&c->refiller_cond);
		if (rc < 0) {
			pthread_mutex_destroy(&c->call_lock);
			pthread_mutex_destroy(&c->lock);
		}
	}
	if (rc < 0)
		goto err_close;
	fwc_slots_add(c);
	*out = c;
	return 0;

err_close:
	fwc_route_free(&c->route);
	fwc_pf_free(&c->pf, n);
	fwc_pf_free(&c->upf, n);
	for (size_t i = 0; i < n; i++)
		if (c->srv[i].fd >= 0)
			close(c->srv[i].fd);
err_free:
	free(c->srv);
	free(c);
	return rc;
}

void fw_client_close(struct fw_client *c)
{
	if (!c)
		return;
	fw_client_shutdown(c);
	pthread_mutex_lock(&c->lock);
	c->refiller_stop = true;
	pthread_cond_signal(&c->refiller_cond);
	pthread_mutex_unlock(&c->lock);
	if (c->refiller_started)
		pthread_join(c->refiller, NULL);
	fwc_route_free(&c->route);
	fwc_slots_free(c);
	for (size_t i = 0; i < c->nsrv; i++)
		if (c->srv[i].fd >= 0)
			close(c->srv[i].fd);
	fwc_pf_free(&c->pf, c->nsrv);
	fwc_pf_free(&c->upf, c->nsrv);
	pthread_cond_destroy(&c->refiller_cond);
	pthread_mutex_destroy(&c->call_lock);
	pthread_mutex_destroy(&c->lock);
	free(c->srv);
	free(c);
}

/* Ends every wait on @fd (poll reports it readable, reads return 0). */
static void wake_fd(int fd)
{
	if (fd >= 0)
		shutdown(fd, SHUT_RD);
}

void fw_client_shutdown(struct fw_client *c)
{
	if (!c || atomic_exchange(&c->hot.closed, true))
		return;
	pthread_mutex_lock(&c->lock);
	c->pf.avail = c->pf.head = c->pf.len = 0;
	c->upf.avail = c->upf.head = 0;
	pthread_cond_signal(&c->refiller_cond);
	pthread_cond_broadcast(&c->pf.cond);
	pthread_cond_broadcast(&c->upf.cond);
	for (size_t i = 0; i < c->nsrv; i++) {
		wake_fd(c->srv[i].fd);
		wake_fd(c->pf_io.fds ? c->pf_io.fds[i] : -1);
		wake_fd(c->upf_io.fds ? c->upf_io.fds[i] : -1);
	}
	pthread_mutex_unlock(&c->lock);
}
