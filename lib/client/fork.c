/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fork: a child starts every client of its parent afresh (pthread_atfork).
 * Before the fork the client list and every client's lock are taken, so the
 * child copies no half-done update; in the child each client drops its
 * buffered IDs and UUIDs and every thread's share, forgets the parent's
 * refiller, closes its copies of the parent's sockets (new ones are opened
 * on first use) and gets fresh locks and conditions. The one-shot calls'
 * lock is held across a round trip, so it is not taken before the fork: the
 * child initialises it again, as every condition a parent's thread may have
 * waited on. The responder choice (route.c) starts as a new client's: no
 * probe thread, no health memory, no RTT sample, a full hedge budget.
 * Calls only run one way: client.c -> fork.c -> prefetch.c, route.c.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "client_impl.h"

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static int fork_rc;

static void fork_prepare(void)
{
	fwc_clients_lock();
	for (struct fw_client *c = fwc_clients_live(); c; c = c->next_client)
		fwc_route_lock(&c->route);
}

static void fork_parent(void)
{
	for (struct fw_client *c = fwc_clients_live(); c; c = c->next_client)
		fwc_route_unlock(&c->route);
	fwc_clients_unlock();
}

/* The parent's sockets and one-shot channel in the child: a new client's. */
static void client_forked(struct fw_client *c)
{
	for (size_t i = 0; i < c->nsrv; i++) {
		if (c->srv[i].fd >= 0)
			close(c->srv[i].fd);
		c->srv[i].fd = -1;
	}
	pthread_mutex_init(&c->call_lock, NULL);
	memset(c->call.seen, 0, sizeof(c->call.seen));
	c->call.seen_next = 0;
	/* No probe thread, every responder healthy, no RTT sample, a full budget. */
	fwc_route_forked(&c->route);
	fwc_pf_forked(c);
}

static void fork_child(void)
{
	for (struct fw_client *c = fwc_clients_live(); c; c = c->next_client)
		client_forked(c);
	fwc_clients_unlock();
}

static void fork_register(void)
{
	fork_rc = -pthread_atfork(fork_prepare, fork_parent, fork_child);
}

int fwc_fork_register(void)
{
	pthread_once(&fork_once, fork_register);
	return fork_rc;
}
