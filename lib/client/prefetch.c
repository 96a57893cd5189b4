/* SPDX-License-Identifier: BSD-3-Clause */
/* Prefetch: fw_client_next()'s per-thread slots over a pool refilled in the
 * background (maximum age by epochs), and fw_client_next_uuid7()'s buffer. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_impl.h"

/* Ticks without a caller taking from the pool before the refiller stops
 * ticking (every ID buffered is expired by then). */
#define FW_CLIENT_IDLE_TICKS      (2u * FW_CLIENT_AGE_TICKS)
/* The refill grows up to this many times opts.prefetch (at most
 * FW_CLIENT_PREFETCH_MAX) while callers drain it: FW_CLIENT_GROW_MAX, and
 * with RANGE requests FW_CLIENT_GROW_MAX_RANGE, so that fewer, larger
 * refills leave the CPU to callers taking hundreds of millions a second. */
#define FW_CLIENT_GROW_MAX        64u
#define FW_CLIENT_GROW_MAX_RANGE  1024u
/* Beyond FW_CLIENT_GROW_MAX x opts.prefetch, a refill asks at most this many
 * milliseconds of one worker's IDs (2^seq_bits a millisecond): with the
 * default 12 sequence bits no more than before, so one client never holds a
 * worker's whole ID space for long. */
#define FW_CLIENT_GROW_SEQ_MS     16u
/* After a failed refill the next one below low water waits this long (callers
 * with nothing left ask at once): a fleet that answers errors at once is not
 * asked in a tight loop. The hold-off of timeout_ms << retries is gone (issue
 * 49): health memory makes the next refill fast. */
#define FW_CLIENT_REFILL_PAUSE_NS (10u * NS_PER_MS)

int fwc_pf_init(struct fw_client_pf *p, struct fw_client_io *io, size_t nsrv)
{
	memset(p, 0, sizeof(*p));
	p->io = io;
	io->fds = malloc(nsrv * sizeof(*io->fds));
	if (!io->fds)
		return -ENOMEM;
	for (size_t i = 0; i < nsrv; i++)
		io->fds[i] = -1;
	return -pthread_cond_init(&p->cond, NULL);
}

void fwc_pf_free(struct fw_client_pf *p, size_t nsrv)
{
	if (p->io && p->io->fds) {
		for (size_t i = 0; i < nsrv; i++)
			if (p->io->fds[i] >= 0)
				close(p->io->fds[i]);
		free(p->io->fds);
		pthread_cond_destroy(&p->cond);
	}
	free(p->pr);
	free(p->uuids);
}

/*
 * Per-thread slots. Their owners take IDs from them without a lock; the
 * lists below are walked only when a thread exits or a client closes.
 * slots_lock guards every client's @slots list and live_clients.
 */
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fw_client *live_clients;
static uint64_t clients_opened; /* under slots_lock */

/*
 * The calling thread's last slot, a cache in front of the key: used only
 * when both the client's address and its serial match, so a client opened
 * later at a freed client's address never sees the old slot.
 */
static __thread struct {
	const struct fw_client *c;
	uint64_t serial;
	struct fw_client_slot *s;
} tls_slot;

/*
 * The key's destructor, in an exiting thread. The slot may have been freed
 * by fw_client_close() meanwhile, so it is looked for (by address and
 * owner) in the live clients' lists before it is touched.
 */
static void slot_exit(void *arg)
{
	pthread_mutex_lock(&slots_lock);
	for (struct fw_client *c = live_clients; c; c = c->next_client)
		for (struct fw_client_slot **pp = &c->slots; *pp; pp = &(*pp)->next) {
			struct fw_client_slot *s = *pp;

			if ((void *)s == arg && pthread_equal(s->owner, pthread_self())) {
				*pp = s->next;
				free(s);
				goto out;
			}
		}
out:
	pthread_mutex_unlock(&slots_lock);
}

/* The calling thread's slot of @c, made on first use; NULL without memory or a key. */
static struct fw_client_slot *slot_new(struct fw_client *c)
{
	struct fw_client_slot *s;

	if (!c->hot.have_key)
		return NULL;
	s = aligned_alloc(alignof(struct fw_client_slot), sizeof(*s));
	if (!s)
		return NULL;
	memset(s, 0, sizeof(*s));
	s->c = c;
	s->owner = pthread_self();
	if (pthread_setspecific(c->hot.key, s) != 0) {
		free(s);
		return NULL;
	}
	pthread_mutex_lock(&slots_lock);
	s->next = c->slots;
	c->slots = s;
	pthread_mutex_unlock(&slots_lock);
	return s;
}

void fwc_slots_add(struct fw_client *c)
{
	/* Without a key (PTHREAD_KEYS_MAX reached) fw_client_next() takes from
	 * the pool under the lock: slower, the same IDs. */
	c->hot.have_key = pthread_key_create(&c->hot.key, slot_exit) == 0;
	pthread_mutex_lock(&slots_lock);
	c->hot.serial = ++clients_opened;
	c->next_client = live_clients;
	live_clients = c;
	pthread_mutex_unlock(&slots_lock);
}

/* Unlists @c and frees its slots: their threads never touch them again
 * (no call may be in flight; the key is deleted, so no destructor runs). */
void fwc_slots_free(struct fw_client *c)
{
	pthread_mutex_lock(&slots_lock);
	for (struct fw_client **pp = &live_clients; *pp; pp = &(*pp)->next_client)
		if (*pp == c) {
			*pp = c->next_client;
			break;
		}
	if (c->hot.have_key)
		pthread_key_delete(c->hot.key);
	while (c->slots) {
		struct fw_client_slot *s = c->slots;

		c->slots = s->next;
		free(s);
	}
	pthread_mutex_unlock(&slots_lock);
}

void fwc_clients_lock(void)
{
	pthread_mutex_lock(&slots_lock);
	for (struct fw_client *c = live_clients; c; c = c->next_client)
		pthread_mutex_lock(&c->lock);
}

void fwc_clients_unlock(void)
{
	for (struct fw_client *c = live_clients; c; c = c->next_client)
		pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&slots_lock);
}

struct fw_client *fwc_clients_live(void)
{
	return live_clients;
}

/* A channel as a new client's: no socket yet, nothing seen. */
static void io_forked(struct fw_client_io *io, size_t nsrv)
{
	for (size_t i = 0; io->fds && i < nsrv; i++) {
		if (io->fds[i] >= 0)
			close(io->fds[i]);
		io->fds[i] = -1;
	}
	memset(io->seen, 0, sizeof(io->seen));
	io->seen_next = 0;
}

/* A prefetch buffer as a new client's, its memory kept. */
static void pf_forked(struct fw_client_pf *p)
{
	p->busy = false;
	p->last_rc = 0;
	p->gen = 0;
	p->hold_until_ns = 0;
	p->avail = p->head = p->len = 0;
	pthread_cond_init(&p->cond, NULL);
}

void fwc_pf_forked(struct fw_client *c)
{
	pf_forked(&c->pf);
	pf_forked(&c->upf);
	io_forked(&c->pf_io, c->nsrv);
	io_forked(&c->upf_io, c->nsrv);
	/* The refiller is a thread of the parent: the next fw_client_next() starts one. */
	c->refiller_started = false;
	fw_cond_init_mono(&c->refiller_cond);
	c->ticking = false;
	c->next_tick_ns = 0;
	c->idle_ticks = 0;
	c->takes = c->takes_seen = 0;
	c->asks = c->asks_served = 0;
	c->waiters = 0;
	c->starved = false;
	c->last_refill_ns = 0;
	c->pf_want = c->opts.prefetch;
	c->pf_low = c->opts.low_water;
	/* The parent's other threads are not in the child: their slots go; the
	 * forking thread's own is emptied (its IDs are the parent's). */
	for (struct fw_client_slot **pp = &c->slots; *pp;) {
		struct fw_client_slot *s = *pp;

		if (pthread_equal(s->owner, pthread_self())) {
			s->head = s->len = 0;
			pp = &s->next;
		} else {
			*pp = s->next;
			free(s);
		}
	}
}

/* The UUID counterpart of refill_ids(). */
static int refill_uuids(struct fw_client *c, struct fw_client_pf *p)
{
	const struct fw_wire_reply *rep = &p->io->reply;
	uint64_t fetched = 0, deadline = fwc_deadline(c);

	while (fetched < c->opts.prefetch) {
		uint64_t want = FW_MIN(c->opts.prefetch - fetched, FW_WIRE_UUID7_MAX);
		size_t n;
		int rc;

		rc = fwc_fetch_uuids(c, p->io, (uint16_t)want, &n, deadline);
		if (rc < 0)
			return rc;
		fetched += n;
		pthread_mutex_lock(&c->lock);
		if (atomic_load(&c->hot.closed)) {
			pthread_mutex_unlock(&c->lock);
			return FW_ECLOSED;
		}
		if (p->head + p->avail + n > p->cap) {
			memmove(p->uuids, p->uuids + p->head, p->avail * FW_UUID_LEN);
			p->head = 0;
		}
		n = FW_MIN(n, p->cap - p->head - p->avail); /* capacity holds: a no-op */
		memcpy(p->uuids + p->head + p->avail, rep->body.uuids, n * FW_UUID_LEN);
		p->avail += n;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&c->lock);
	}
	return 0;
}

/*
 * Waits on @cond (CLOCK_REALTIME, default attributes) under c->lock until
 * @deadline (fw_mono_ns()), in slices of FW_CLIENT_CANCEL_SLICE_MS that ask
 * opts.cancel when there is one. Returns -ECANCELED when asked to stop,
 * FW_ETIMEOUT once the deadline has passed, else 0 (a wake-up or a slice's end).
 */
static int cond_wait_slice(struct fw_client *c, pthread_cond_t *cond, uint64_t deadline)
{
	uint64_t now = fw_mono_ns(), ns;
	struct timespec ts;

	if (cancelled(c, NULL))
		return -ECANCELED;
	if (now >= deadline)
		return FW_ETIMEOUT;
	ns = deadline - now;
	if (c->opts.cancel)
		ns = FW_MIN(ns, FW_CLIENT_CANCEL_SLICE_MS * NS_PER_MS);
	clock_gettime(CLOCK_REALTIME, &ts);
	ns += (uint64_t)ts.tv_nsec;
	ts.tv_sec += (time_t)(ns / 1000000000u);
	ts.tv_nsec = (long)(ns % 1000000000u);
	pthread_cond_timedwait(cond, &c->lock, &ts);
	return 0;
}

/*
 * The prefetching loop shared by fw_client_next() and fw_client_next_uuid7():
 * takes one item into @out, refilling outside c->lock when the buffer runs
 * low. One refill is in flight at a time; other callers keep taking from
 * the buffer, and wait on p->cond only when it is empty. Called and
 * returns with c->lock held.
 */
static int pf_next(struct fw_client *c, struct fw_client_pf *p,
		   int (*refill)(struct fw_client *, struct fw_client_pf *),
		   void (*take)(struct fw_client_pf *, void *), void *out)
{
	uint64_t gen0 = p->gen, deadline = fwc_deadline(c);

	for (;;) {
		if (atomic_load(&c->hot.closed))
			return FW_ECLOSED;
		bool low = p->avail == 0 ||
			   (p->avail < c->opts.low_water && fw_mono_ns() >= p->hold_until_ns);

		if (low && !p->busy) {
			int rc;

			/* A refill finished while this caller waited and left nothing: its error.
			 */
			if (p->avail == 0 && p->gen != gen0 && p->last_rc < 0)
				return p->last_rc;
			p->busy = true;
			pthread_mutex_unlock(&c->lock);
			rc = refill(c, p);
			pthread_mutex_lock(&c->lock);
			p->busy = false;
			p->gen++;
			p->last_rc = rc;
			gen0 = p->gen;
			/* A cancelled wait says nothing about the responders: no pause. */
			if (rc < 0 && rc != -ECANCELED)
				p->hold_until_ns = fw_mono_ns() + FW_CLIENT_REFILL_PAUSE_NS;
			pthread_cond_broadcast(&p->cond);
			if (p->avail == 0 && rc < 0)
				return rc;
		}
		if (p->avail > 0) {
			take(p, out);
			return 0;
		}
		if (p->busy) {
			int wrc = cond_wait_slice(c, &p->cond, deadline);

			if (wrc)
				return wrc;
		}
	}
}

static void take_uuid(struct fw_client_pf *p, void *out)
{
	memcpy(out, p->uuids[p->head], FW_UUID_LEN);
	p->head++;
	p->avail--;
}

/* ---- fw_client_next(): per-thread slots over a pool refilled in the background ---- */

/* Room for @n more ranges at the pool's tail: compacts, then grows. Under c->lock. */
static bool pool_room(struct fw_client_pf *p, size_t n)
{
	struct fw_client_pr *q;
	size_t cap;

	if (p->head + p->len + n <= p->cap)
		return true;
	if (p->head) {
		memmove(p->pr, p->pr + p->head, p->len * sizeof(*p->pr));
		p->head = 0;
	}
	if (p->len + n <= p->cap)
		return true;
	cap = p->cap * 2 > p->len + n ? p->cap * 2 : p->len + n;
	q = realloc(p->pr, cap * sizeof(*p->pr));
	if (!q)
		return false;
	p->pr = q;
	p->cap = cap;
	return true;
}

/* Appends @n validated ranges to the pool, stamped with the epoch and the
 * time. Under c->lock. */
static void pool_put(struct fw_client *c, const struct fw_wire_range *r, size_t n)
{
	struct fw_client_pf *p = &c->pf;
	uint64_t epoch = atomic_load(&c->hot.epoch), now = fw_mono_ns();

	if (!pool_room(p, n))
		return; /* no memory: these IDs are wasted, never reused */
	for (size_t i = 0; i < n; i++) {
		struct fw_client_pr *tail = p->len ? &p->pr[p->head + p->len - 1] : NULL;

		/* LIST replies are mostly consecutive IDs: store them as runs. */
		if (tail && tail->epoch == epoch && tail->first + tail->n == r[i].first)
			tail->n += r[i].n;
		else
			p->pr[p->head + p->len++] = (struct fw_client_pr){
				.first = r[i].first, .n = r[i].n, .epoch = epoch, .at_ns = now};
		p->avail += r[i].n;
	}
}

/* Drops the pool's IDs older than max_age (by the epoch or the clock). Under c->lock. */
static void pool_drop_expired(struct fw_client *c, uint64_t now)
{
	struct fw_client_pf *p = &c->pf;
	uint64_t epoch = atomic_load(&c->hot.epoch);
	uint64_t max_ns = (uint64_t)c->opts.max_age_ms * NS_PER_MS;

	while (p->len) {
		const struct fw_client_pr *h = &p->pr[p->head];

		if (h->epoch + FW_CLIENT_AGE_TICKS > epoch && now - h->at_ns < max_ns)
			break;
		p->avail -= h->n;
		p->head++;
		p->len--;
	}
}

/* Moves up to pf_want / 8 IDs (one caller's share) from the pool to @s. Under c->lock. */
static void slot_fill(struct fw_client *c, struct fw_client_slot *s)
{
	struct fw_client_pf *p = &c->pf;
	uint64_t want = FW_MIN(c->pf_want / 8, FW_WIRE_RANGE_IDS_MAX);

	if (want == 0)
		want = 1;
	s->head = s->len = 0;
	s->epoch = UINT64_MAX;
	while (want && p->len && s->len < FW_CLIENT_SLOT_RANGES) {
		struct fw_client_pr *h = &p->pr[p->head];
		uint64_t k = FW_MIN(want, h->n);

		s->r[s->len++] = (struct fw_wire_range){.first = h->first, .n = (uint32_t)k};
		s->epoch = FW_MIN(s->epoch, h->epoch);
		h->first += k;
		h->n -= k;
		p->avail -= k;
		want -= k;
		if (h->n == 0) {
			p->head++;
			p->len--;
		}
	}
}

static inline uint64_t slot_take(struct fw_client_slot *s)
{
	struct fw_wire_range *r = &s->r[s->head];
	uint64_t id = r->first++;

	if (--r->n == 0) {
		s->head++;
		s->len--;
	}
	return id;
}

/*
 * Fetches @want IDs into the pool on the refiller's channel, without
 * c->lock: each reply's IDs join the pool (and waiters are woken) as it
 * arrives, and stay there if a later request of the refill fails.
 */
static int refill_ids(struct fw_client *c, uint64_t want, uint64_t deadline)
{
	struct fw_wire_range r[FW_WIRE_LIST_MAX];
	bool use_range = c->opts.use_range;
	uint32_t per_req = use_range ? FW_WIRE_RANGE_IDS_MAX : FW_WIRE_LIST_MAX;
	uint64_t fetched = 0;

	while (fetched < want) {
		size_t n;
		int rc;

		rc = fwc_fetch(c, &c->pf_io, use_range, (uint16_t)FW_MIN(want - fetched, per_req),
			       r, &n, deadline);
		if (rc < 0)
			return rc;
		for (size_t i = 0; i < n; i++)
			fetched += r[i].n;
		pthread_mutex_lock(&c->lock);
		if (atomic_load(&c->hot.closed)) {
			pthread_mutex_unlock(&c->lock);
			return FW_ECLOSED;
		}
		pool_put(c, r, n);
		pthread_cond_broadcast(&c->pf.cond);
		pthread_mutex_unlock(&c->lock);
	}
	return 0;
}

/*
 * One refill of pf_want IDs, run by the refiller. Called and returns with
 * c->lock held; drops it for the round trips. The size adapts as Leaf's
 * segments do: doubled (up to FW_CLIENT_GROW_MAX x opts.prefetch, or with
 * RANGE and a known layout up to FW_CLIENT_GROW_MAX_RANGE x opts.prefetch
 * and FW_CLIENT_GROW_SEQ_MS of a worker's IDs; never over
 * FW_CLIENT_PREFETCH_MAX) when a caller found the pool empty since the last refill, halved (down to
 * opts.prefetch) when the last one lasted more than half the maximum age;
 * at the largest size, the low-water mark doubles instead (up to two
 * refills), so that one refill is always in flight while callers drain.
 */
static void refill_once(struct fw_client *c)
{
	struct fw_client_pf *p = &c->pf;
	uint64_t start = fw_mono_ns();
	uint64_t cap = (uint64_t)c->opts.prefetch * FW_CLIENT_GROW_MAX;
	uint64_t want, deadline;
	int rc;

	if (c->opts.use_range && c->have_layout)
		cap = FW_MAX(cap, FW_MIN((uint64_t)c->opts.prefetch * FW_CLIENT_GROW_MAX_RANGE,
					 (1ull << c->layout.seq_bits) * FW_CLIENT_GROW_SEQ_MS));
	cap = FW_MIN(cap, FW_CLIENT_PREFETCH_MAX);
	cap = FW_MAX(cap, c->opts.prefetch);
	if (p->gen > 0 && c->starved && c->pf_want < cap) {
		c->pf_want = FW_MIN(c->pf_want * 2, cap);
		c->pf_low = c->pf_want * c->opts.low_water / c->opts.prefetch;
	} else if (p->gen > 0 && c->starved) {
		/* At the largest refill: start earlier, up to one refill always in flight. */
		c->pf_low = FW_MIN(FW_MAX(c->pf_low * 2, 1), 2 * c->pf_want);
	} else if (p->gen > 0 &&
		   start - c->last_refill_ns > (uint64_t)c->opts.max_age_ms * NS_PER_MS / 2) {
		c->pf_want = FW_MAX(c->pf_want / 2, c->opts.prefetch);
		c->pf_low = c->pf_want * c->opts.low_water / c->opts.prefetch;
	}
	c->last_refill_ns = start;
	c->starved = false;
	c->asks_served = c->asks;
	p->busy = true;
	/* Whole RANGE requests: 65,536 IDs would take a second round trip for one. */
	want = c->pf_want;
	if (c->opts.use_range && want > FW_WIRE_RANGE_IDS_MAX)
		want -= want % FW_WIRE_RANGE_IDS_MAX;
	c->refill_deadline_ns = fwc_deadline(c); /* a refill is one call */
	deadline = c->refill_deadline_ns;
	pthread_mutex_unlock(&c->lock);
	rc = refill_ids(c, want, deadline);
	pthread_mutex_lock(&c->lock);
	p->busy = false;
	p->gen++;
	p->last_rc = rc;
	/* Callers that asked meanwhile take from this refill, or get its error; if
	 * they took all it brought before asking, their ask still stands. */
	if (p->avail > 0 || rc < 0)
		c->asks_served = c->asks;
	/* A failed refill pauses the next one briefly (callers with nothing left still ask). */
	p->hold_until_ns = rc < 0 ? fw_mono_ns() + FW_CLIENT_REFILL_PAUSE_NS : 0;
	pthread_cond_broadcast(&p->cond);
}

/* The absolute CLOCK_MONOTONIC time @ns as a timespec, for refiller_cond. */
static void refiller_wait(struct fw_client *c, uint64_t until_ns)
{
	struct timespec ts;

	if (until_ns == UINT64_MAX) {
		pthread_cond_wait(&c->refiller_cond, &c->lock);
		return;
	}
	ts = fw_timespec_of_ns(until_ns);
	pthread_cond_timedwait(&c->refiller_cond, &c->lock, &ts);
}

/* One tick of the epoch that ages the slots: stops ticking when idle, drops
 * the pool's expired IDs. Under c->lock. */
static void age_tick(struct fw_client *c, uint64_t now)
{
	atomic_fetch_add(&c->hot.epoch, 1);
	c->next_tick_ns = now + c->tick_ns;
	if (c->takes == c->takes_seen && c->waiters == 0)
		c->ticking = ++c->idle_ticks < FW_CLIENT_IDLE_TICKS;
	else
		c->idle_ticks = 0;
	c->takes_seen = c->takes;
	pool_drop_expired(c, now);
}

/* The refiller's channel's hook while it waits for a reply: the tick that is due. */
static void refiller_slice(void *arg)
{
	struct fw_client *c = arg;
	uint64_t now;

	pthread_mutex_lock(&c->lock);
	now = fw_mono_ns();
	if (c->ticking && now >= c->next_tick_ns)
		age_tick(c, now);
	pthread_mutex_unlock(&c->lock);
}

void fwc_pf_refiller_io(struct fw_client *c)
{
	c->pf_io.background = true;
	c->pf_io.slice_ns = FW_MIN(c->tick_ns, FW_CLIENT_CANCEL_SLICE_MS * NS_PER_MS);
	c->pf_io.on_slice = refiller_slice;
	c->pf_io.on_slice_arg = c;
}

/*
 * The refiller thread: advances the epoch while callers take IDs, drops
 * expired IDs from the pool, and refills it when a caller asks (the pool
 * is empty) or when it falls below pf_low (not during a hold-off). Stops
 * ticking after FW_CLIENT_IDLE_TICKS ticks without a take: every buffered
 * ID has expired by then, and an idle client costs no wake-ups.
 */
static void *refiller_run(void *arg)
{
	struct fw_client *c = arg;

	pthread_mutex_lock(&c->lock);
	while (!c->refiller_stop) {
		uint64_t now = fw_mono_ns(), until = UINT64_MAX;
		bool low;

		if (atomic_load(&c->hot.closed)) {
			refiller_wait(c, until);
			continue;
		}
		if (c->ticking && now >= c->next_tick_ns) {
			age_tick(c, now);
			continue;
		}
		low = c->ticking && c->pf.avail < c->pf_low;
		if (c->asks != c->asks_served || (low && now >= c->pf.hold_until_ns)) {
			refill_once(c);
			continue;
		}
		if (c->ticking)
			until = c->next_tick_ns;
		if (low)
			until = FW_MIN(until, c->pf.hold_until_ns);
		refiller_wait(c, until);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Starts the refiller once, with every signal blocked (a host such as a
 * PostgreSQL backend keeps its signals on its own threads). Under c->lock. */
static int refiller_start(struct fw_client *c)
{
	sigset_t all, old;
	int rc;

	if (c->refiller_started)
		return 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&c->refiller, NULL, refiller_run, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	c->refiller_started = true;
	return 0;
}

/* Waits on pf.cond for the refiller until @deadline, in slices that ask
 * opts.cancel. Under c->lock. */
static int pool_wait(struct fw_client *c, uint64_t deadline)
{
	return cond_wait_slice(c, &c->pf.cond, deadline);
}

/*
 * fw_client_next() when the caller's slot is empty, expired or missing:
 * refills the slot from the pool under c->lock (or, without a slot, takes
 * one ID from the pool), waiting for the refiller only when the pool is
 * empty. A caller that waited through a refill that failed and left
 * nothing gets that refill's error.
 */
static __attribute__((noinline)) int next_slow(struct fw_client *c, struct fw_client_slot *s,
					       uint64_t *id)
{
	bool waited = false;
	uint64_t gen0 = 0, deadline = fwc_deadline(c), until;
	int rc;

	if (atomic_load(&c->hot.closed))
		return FW_ECLOSED;
	if (!s && c->hot.have_key)
		s = pthread_getspecific(c->hot.key);
	if (s)
		s->len = 0; /* empty or expired: these IDs are wasted, never reused */
	else
		s = slot_new(c);
	if (s) {
		tls_slot.c = c;
		tls_slot.serial = c->hot.serial;
		tls_slot.s = s;
	}
	pthread_mutex_lock(&c->lock);
	rc = refiller_start(c);
	c->takes++;
	if (!c->ticking) {
		c->ticking = true;
		c->idle_ticks = 0;
		c->next_tick_ns = fw_mono_ns() + c->tick_ns;
		pthread_cond_signal(&c->refiller_cond);
	}
	while (rc == 0) {
		if (atomic_load(&c->hot.closed)) {
			rc = FW_ECLOSED;
			break;
		}
		pool_drop_expired(c, fw_mono_ns());
		if (c->pf.avail > 0) {
			if (s) {
				slot_fill(c, s);
				*id = slot_take(s);
			} else {
				struct fw_client_pr *h = &c->pf.pr[c->pf.head];

				*id = h->first++;
				c->pf.avail--;
				if (--h->n == 0) {
					c->pf.head++;
					c->pf.len--;
				}
			}
			if (c->pf.avail < c->pf_low && !c->pf.busy)
				pthread_cond_signal(&c->refiller_cond);
			break;
		}
		if (waited && c->pf.gen != gen0 && c->pf.last_rc < 0) {
			rc = c->pf.last_rc;
			break;
		}
		if (!waited) {
			waited = true;
			gen0 = c->pf.gen;
			c->asks++;
		}
		c->starved = true;
		c->waiters++;
		pthread_cond_signal(&c->refiller_cond);
		/* The refill this caller asked for started just after it and ends
		 * at its own deadline, a hair later: wait for it (at most a slice
		 * more), so the caller gets its error and fw_client_last_error(). */
		until = deadline;
		if (c->pf.busy && c->refill_deadline_ns > deadline &&
		    c->refill_deadline_ns - deadline <= FW_CLIENT_CANCEL_SLICE_MS * NS_PER_MS)
			until = c->refill_deadline_ns;
		rc = pool_wait(c, until);
		c->waiters--;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int fw_client_next(struct fw_client *c, uint64_t *id)
{
	struct fw_client_slot *s;

	if (!c || !id)
		return -EINVAL;
	s = tls_slot.c == c && tls_slot.serial == c->hot.serial ? tls_slot.s : NULL;
	/* The fast path: this thread's own IDs, no lock, no shared write. */
	if (s && s->len &&
	    s->epoch + FW_CLIENT_AGE_TICKS >
		    atomic_load_explicit(&c->hot.epoch, memory_order_relaxed) &&
	    !atomic_load_explicit(&c->hot.closed, memory_order_relaxed)) {
		*id = slot_take(s);
		return 0;
	}
	return next_slow(c, s, id);
}

int fw_client_next_uuid7(struct fw_client *c, uint8_t uuid[FW_UUID_LEN])
{
	int rc = 0;

	if (!c || !uuid)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	if (!c->upf.uuids) {
		/* Refills start below low_water and add at most prefetch UUIDs. */
		c->upf.cap = (size_t)c->opts.low_water + c->opts.prefetch + FW_WIRE_UUID7_MAX;
		c->upf.uuids = calloc(c->upf.cap, FW_UUID_LEN);
		if (!c->upf.uuids)
			rc = -ENOMEM;
	}
	if (rc == 0)
		rc = pf_next(c, &c->upf, refill_uuids, take_uuid, uuid);
	pthread_mutex_unlock(&c->lock);
	return rc;
}
