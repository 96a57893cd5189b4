/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A client in a process that forks (issue 48): a child never hands out an
 * ID or UUID its parent or a sibling may hand out, and its calls work as a
 * new client's would, even when it forked while a refill was in flight or
 * a lock of the client was held by another thread. Against a fake
 * responder in the parent (one ID counter, so every ID it gives is new),
 * which serves the children's requests too. Every wait on a child is
 * bounded (KID_WAIT_MS): a child that hangs is killed and the test fails.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "client_impl.h" /* test_fork_with_lock_held holds c->lock as the refiller does */
#include "fw_client.h"
#include "fw_err.h"
#include "fw_layout.h"
#include "fw_uuid.h"
#include "fw_wire.h"

#define FAKE_DC     3
#define FAKE_WORKER 17
#define KID_WAIT_MS 10000
#define HOLD_MAX_MS 10000
#define PER_PROC    300 /* IDs each process takes */
#define KIDS        3

/* ---- a fake responder: correct answers from one counter; one request held on demand ---- */

struct fake {
	int fd;
	uint16_t port;
	pthread_t thr;
	atomic_bool stop;
	struct fw_layout layout;
	uint64_t ms;
	uint32_t seq;
	atomic_uint nreq;
	/* the next request of this op is held (not answered) until release */
	atomic_uint hold_op;
	atomic_bool holding;
	atomic_bool release;
	struct fw_wire_hdr held;
	struct sockaddr_storage held_from;
	socklen_t held_fromlen;
};

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* @n consecutive IDs within the current ms (fewer if it ends); the first. */
static uint64_t fake_take(struct fake *f, uint32_t *n)
{
	uint64_t id;
	uint32_t left = (uint32_t)fw_layout_ids_per_ms(&f->layout) - f->seq;

	if (*n > left)
		*n = left;
	if (fw_layout_encode(&f->layout, f->ms, FAKE_DC, FAKE_WORKER, f->seq, &id) != 0)
		abort();
	f->seq += *n;
	if (f->seq == fw_layout_ids_per_ms(&f->layout)) {
		f->seq = 0;
		f->ms++;
	}
	return id;
}

static void fake_answer(struct fake *f, const struct fw_wire_hdr *req,
			const struct sockaddr_storage *to, socklen_t tolen)
{
	uint8_t buf[FW_WIRE_MTU_PAYLOAD];
	struct fw_wire_hdr h = *req;
	uint64_t ids[FW_WIRE_LIST_MAX];
	struct fw_wire_range r[FW_WIRE_RANGES_MAX];
	uint8_t u[FW_WIRE_UUID7_MAX][FW_UUID_LEN];
	struct fw_wire_info info = {0};
	struct fw_uuid7_fmt fmt;
	uint32_t left = req->count, one;
	int len = -1;
	unsigned n = 0;

	h.status = FW_WIRE_ST_OK;
	h.flags = 0;
	h.datacenter = FAKE_DC;
	h.worker = FAKE_WORKER;
	h.retry_after_us = 0;
	switch (req->op) {
	case FW_WIRE_OP_ID:
	case FW_WIRE_OP_LIST:
		for (n = 0; n < req->count; n++) {
			one = 1;
			ids[n] = fake_take(f, &one);
		}
		len = fw_wire_write_ids(buf, sizeof(buf), &h, ids, (uint16_t)n);
		break;
	case FW_WIRE_OP_RANGE:
		while (left && n < FW_WIRE_RANGES_MAX) {
			uint32_t k = left;

			r[n].first = fake_take(f, &k);
			r[n++].n = k;
			left -= k;
		}
		if (left)
			h.flags |= FW_WIRE_F_PARTIAL;
		len = fw_wire_write_ranges(buf, sizeof(buf), &h, r, (uint16_t)n);
		break;
	case FW_WIRE_OP_UUID7:
		if (fw_uuid7_fmt_init(&fmt, &f->layout, FAKE_DC, FAKE_WORKER) != 0)
			abort();
		for (n = 0; n < req->count; n++) {
			one = 1;
			if (fw_uuid7_from_id(&fmt, fake_take(f, &one), (uint64_t)random(), u[n]) !=
			    0)
				abort();
		}
		len = fw_wire_write_uuids(buf, sizeof(buf), &h, (const uint8_t(*)[FW_UUID_LEN])u,
					  (uint16_t)n);
		break;
	case FW_WIRE_OP_INFO:
		info.epoch_ms = f->layout.epoch_ms;
		info.time_bits = f->layout.time_bits;
		info.dc_bits = f->layout.dc_bits;
		info.worker_bits = f->layout.worker_bits;
		info.seq_bits = f->layout.seq_bits;
		info.version_min = FW_WIRE_VERSION;
		info.version_max = FW_WIRE_VERSION;
		info.list_max = FW_WIRE_LIST_MAX;
		info.ranges_max = FW_WIRE_RANGES_MAX;
		info.features = FW_WIRE_INFO_F_UUID7;
		len = fw_wire_write_info(buf, sizeof(buf), &h, &info);
		break;
	}
	if (len <= 0)
		abort(); /* the fake's thread: no cmocka assert here */
	sendto(f->fd, buf, (size_t)len, 0, (const struct sockaddr *)to, tolen);
}

static void *fake_run(void *arg)
{
	struct fake *f = arg;
	uint8_t buf[2048];
	uint64_t held_at = 0;

	while (!atomic_load(&f->stop)) {
		struct pollfd p = {.fd = f->fd, .events = POLLIN};
		struct sockaddr_storage from;
		socklen_t fromlen = sizeof(from);
		struct fw_wire_hdr h;
		ssize_t n;

		if (atomic_load(&f->holding) &&
		    (atomic_load(&f->release) || mono_ms() - held_at > HOLD_MAX_MS)) {
			fake_answer(f, &f->held, &f->held_from, f->held_fromlen);
			atomic_store(&f->holding, false);
		}
		if (poll(&p, 1, 2) <= 0)
			continue;
		n = recvfrom(f->fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fromlen);
		if (n < 0 || fw_wire_parse_request(buf, (size_t)n, &h) != 0)
			continue;
		atomic_fetch_add(&f->nreq, 1);
		if (h.op == atomic_load(&f->hold_op)) {
			atomic_store(&f->hold_op, 0);
			f->held = h;
			f->held_from = from;
			f->held_fromlen = fromlen;
			held_at = mono_ms();
			atomic_store(&f->holding, true);
			continue;
		}
		fake_answer(f, &h, &from, fromlen);
	}
	return NULL;
}

static struct fake *fake_start(void)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof(sin);

	assert_non_null(f);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	f->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(f->fd >= 0);
	assert_int_equal(bind(f->fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(f->fd, (struct sockaddr *)&sin, &len), 0);
	f->port = ntohs(sin.sin_port);
	assert_int_equal(fw_layout_init(&f->layout, FW_DEFAULT_EPOCH_MS, 5, 5, 12, 0), 0);
	f->ms = 1000;
	assert_int_equal(pthread_create(&f->thr, NULL, fake_run, f), 0);
	return f;
}

static void fake_stop(struct fake *f)
{
	atomic_store(&f->stop, true);
	pthread_join(f->thr, NULL);
	close(f->fd);
	free(f);
}

/* Waits (bounded) until the fake holds a request. */
static bool fake_await_holding(struct fake *f)
{
	uint64_t deadline = mono_ms() + HOLD_MAX_MS / 2;

	while (!atomic_load(&f->holding) && mono_ms() < deadline)
		sleep_ms(1);
	return atomic_load(&f->holding);
}

static struct fw_client *client_for(const struct fake *f, uint32_t prefetch, uint32_t low)
{
	struct fw_client_opts o;
	struct fw_client *c = NULL;
	char addr[64];
	const char *servers[] = {addr};

	fw_client_opts_init(&o);
	o.timeout_ms = 5000; /* only a hang reaches it: no resend of a held request */
	o.retries = 1;
	o.prefetch = prefetch;
	o.low_water = low;
	o.trusted = true;
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", f->port);
	assert_int_equal(fw_client_open(servers, 1, &o, &c), 0);
	return c;
}

/* ---- children: each writes what it took to a pipe, then _exit()s ---- */

/* What a child does with the client; returns its exit status (0 when all went well). */
typedef int (*kid_fn)(struct fw_client *c, int out);

struct kid {
	pid_t pid;
	int fd;
};

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* PER_PROC IDs with fw_client_next(), then one with fw_client_get(). */
static int kid_ids(struct fw_client *c, int out)
{
	uint64_t ids[PER_PROC + 1];

	for (int i = 0; i < PER_PROC; i++)
		if (fw_client_next(c, &ids[i]) != 0)
			return 2;
	if (fw_client_get(c, &ids[PER_PROC]) != 0)
		return 3;
	return write_all(out, ids, sizeof(ids)) ? 4 : 0;
}

/* PER_PROC UUIDs with fw_client_next_uuid7(). */
static int kid_uuids(struct fw_client *c, int out)
{
	uint8_t u[PER_PROC][FW_UUID_LEN];

	for (int i = 0; i < PER_PROC; i++)
		if (fw_client_next_uuid7(c, u[i]) != 0)
			return 2;
	return write_all(out, u, sizeof(u)) ? 4 : 0;
}

/* Children not reaped yet: a test that fails part way leaves none behind (kids_reap()). */
#define KIDS_MAX 16
static pid_t live_kids[KIDS_MAX];

static void kid_forget(pid_t pid)
{
	for (int i = 0; i < KIDS_MAX; i++)
		if (live_kids[i] == pid)
			live_kids[i] = 0;
}

/* Every test's teardown: kills and reaps the children a failed test left. */
static int kids_reap(void **state)
{
	(void)state;
	for (int i = 0; i < KIDS_MAX; i++)
		if (live_kids[i] > 0) {
			kill(live_kids[i], SIGKILL);
			waitpid(live_kids[i], NULL, 0);
			live_kids[i] = 0;
		}
	return 0;
}

static struct kid kid_start(struct fw_client *c, kid_fn fn)
{
	struct kid k;
	int p[2], slot = 0;

	while (slot < KIDS_MAX && live_kids[slot])
		slot++;
	assert_true(slot < KIDS_MAX);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	k.pid = fork();
	assert_true(k.pid >= 0);
	if (k.pid == 0) {
		close(p[0]);
		_exit(fn(c, p[1]));
	}
	live_kids[slot] = k.pid;
	close(p[1]);
	k.fd = p[0];
	return k;
}

/*
 * Reads what the child wrote until it closes the pipe, and reaps it, within
 * KID_WAIT_MS of the call; kills it past that. Returns the bytes read, or -1
 * when the child hung or did not exit with status 0.
 */
static ssize_t kid_collect(struct kid *k, void *buf, size_t cap)
{
	uint64_t deadline = mono_ms() + KID_WAIT_MS;
	size_t got = 0;
	int status = 0;

	while (got < cap && mono_ms() < deadline) {
		struct pollfd p = {.fd = k->fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 10) <= 0)
			continue;
		n = read(k->fd, (uint8_t *)buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(k->fd);
	while (waitpid(k->pid, &status, WNOHANG) == 0) {
		if (mono_ms() >= deadline) {
			fprintf(stderr, "child %d still running after %u ms: killed\n", (int)k->pid,
				KID_WAIT_MS);
			kill(k->pid, SIGKILL);
			waitpid(k->pid, &status, 0);
			kid_forget(k->pid);
			return -1;
		}
		sleep_ms(5);
	}
	kid_forget(k->pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "child %d ended with status %#x\n", (int)k->pid, status);
		return -1;
	}
	return (ssize_t)got;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Fails (naming it) if an ID appears twice among @n. Sorts @ids. */
static void assert_unique(uint64_t *ids, size_t n)
{
	qsort(ids, n, sizeof(*ids), cmp_u64);
	for (size_t i = 1; i < n; i++)
		if (ids[i] == ids[i - 1])
			fail_msg("ID %llu handed out twice (%zu IDs)", (unsigned long long)ids[i],
				 n);
}

/* ---- the parent's load: threads taking IDs until told to stop ---- */

#define LOAD_MAX 200000

struct load {
	struct fw_client *c;
	atomic_bool stop;
	int rc;
	size_t n;
	uint64_t *ids;
};

static void *load_run(void *arg)
{
	struct load *l = arg;

	while (!atomic_load(&l->stop) && l->n < LOAD_MAX && l->rc == 0)
		l->rc = fw_client_next(l->c, &l->ids[l->n++]);
	if (l->rc)
		l->n--;
	return NULL;
}

static void load_start(struct load *l, pthread_t *t, struct fw_client *c)
{
	memset(l, 0, sizeof(*l));
	l->c = c;
	l->ids = calloc(LOAD_MAX, sizeof(*l->ids));
	assert_non_null(l->ids);
	assert_int_equal(pthread_create(t, NULL, load_run, l), 0);
}

/* Collects the children's IDs (each PER_PROC + 1) and the load's and the
 * parent's own, and checks that none appears twice. */
static void check_all(struct kid *kids, int nkids, struct load *loads, int nloads,
		      const uint64_t *own, size_t nown)
{
	size_t cap = (size_t)nkids * (PER_PROC + 1) + nown, n = 0;
	uint64_t *all;
	int bad = 0;

	for (int i = 0; i < nloads; i++)
		cap += loads[i].n;
	all = calloc(cap, sizeof(*all));
	assert_non_null(all);
	for (int i = 0; i < nkids; i++) {
		ssize_t got = kid_collect(&kids[i], all + n, (PER_PROC + 1) * sizeof(*all));

		if (got != (ssize_t)((PER_PROC + 1) * sizeof(*all))) {
			fprintf(stderr, "child %d: %zd bytes of its %d IDs\n", i, got,
				PER_PROC + 1);
			bad++;
		}
		n += PER_PROC + 1;
	}
	if (bad)
		fail_msg("%d of %d children did not hand out all their IDs", bad, nkids);
	for (int i = 0; i < nloads; i++) {
		assert_int_equal(loads[i].rc, 0);
		memcpy(all + n, loads[i].ids, loads[i].n * sizeof(*all));
		n += loads[i].n;
		free(loads[i].ids);
	}
	memcpy(all + n, own, nown * sizeof(*all));
	n += nown;
	assert_unique(all, n);
	free(all);
}

/*
 * The probe: after a first fw_client_next() (the pool and the
 * forking thread's share hold IDs), three children and the parent take
 * PER_PROC IDs each (and one one-shot ID). No ID twice, every child all of
 * its own. Before the fix the children handed out the parent's buffered
 * IDs.
 */
static void test_fork_children_hand_out_their_own(void **state)
{
	struct fake *f = fake_start();
	struct fw_client *c = client_for(f, 1024, 256);
	struct kid kids[KIDS];
	uint64_t own[PER_PROC + 1];

	(void)state;
	assert_int_equal(fw_client_next(c, &own[0]), 0);
	for (int i = 0; i < KIDS; i++)
		kids[i] = kid_start(c, kid_ids);
	for (int i = 1; i < PER_PROC; i++)
		assert_int_equal(fw_client_next(c, &own[i]), 0);
	assert_int_equal(fw_client_get(c, &own[PER_PROC]), 0);
	check_all(kids, KIDS, NULL, 0, own, PER_PROC + 1);
	fw_client_close(c);
	fake_stop(f);
}

/*
 * The same under load: two threads keep taking IDs (refills run, slots of
 * other threads hold shares) while the parent forks three children.
 */
static void test_fork_under_load(void **state)
{
	struct fake *f = fake_start();
	struct fw_client *c = client_for(f, 1024, 256);
	struct kid kids[KIDS];
	struct load loads[2];
	pthread_t t[2];
	uint64_t own[PER_PROC + 1];

	(void)state;
	assert_int_equal(fw_client_next(c, &own[0]), 0);
	for (int i = 0; i < 2; i++)
		load_start(&loads[i], &t[i], c);
	for (int i = 0; i < KIDS; i++)
		kids[i] = kid_start(c, kid_ids);
	for (int i = 1; i < PER_PROC; i++)
		assert_int_equal(fw_client_next(c, &own[i]), 0);
	assert_int_equal(fw_client_get(c, &own[PER_PROC]), 0);
	for (int i = 0; i < 2; i++) {
		atomic_store(&loads[i].stop, true);
		pthread_join(t[i], NULL);
	}
	check_all(kids, KIDS, loads, 2, own, PER_PROC + 1);
	fw_client_close(c);
	fake_stop(f);
}

/*
 * A fork while the refiller's request is in flight (the fake holds it):
 * the child must not wait for the parent's refill (its refiller is not in
 * the child) nor take the IDs left in the pool: it starts its own refiller
 * and takes PER_PROC new IDs. Before the fix the child handed out the
 * pool's last IDs, then waited for ever (killed after KID_WAIT_MS).
 */
static void test_fork_during_refill(void **state)
{
	struct fake *f = fake_start();
	struct fw_client *c = client_for(f, 64, 32);
	struct kid kid;
	struct load load;
	pthread_t t;
	uint64_t first;

	(void)state;
	assert_int_equal(fw_client_next(c, &first), 0);
	atomic_store(&f->hold_op, FW_WIRE_OP_RANGE);
	load_start(&load, &t, c); /* drains the pool below low water: a refill, held */
	assert_true(fake_await_holding(f));
	kid = kid_start(c, kid_ids);
	sleep_ms(20); /* the load goes on in the parent meanwhile */
	atomic_store(&f->release, true);
	sleep_ms(20);
	atomic_store(&load.stop, true);
	pthread_join(t, NULL);
	check_all(&kid, 1, &load, 1, &first, 1);
	fw_client_close(c);
	fake_stop(f);
}

struct holder {
	struct fw_client *c;
	atomic_bool held;
};

/* Holds the client's lock for 200 ms, as a refiller between two replies does. */
static void *hold_lock(void *arg)
{
	struct holder *h = arg;

	pthread_mutex_lock(&h->c->lock);
	atomic_store(&h->held, true);
	sleep_ms(200);
	pthread_mutex_unlock(&h->c->lock);
	return NULL;
}

/*
 * A fork while another thread holds the client's lock (the refiller takes
 * it between its round trips): the child must not inherit it held. Before
 * the fix the child's first call past its share waited for ever on it.
 */
static void test_fork_with_lock_held(void **state)
{
	struct fake *f = fake_start();
	struct fw_client *c = client_for(f, 1024, 256);
	struct holder h = {.c = c};
	struct kid kid;
	pthread_t t;
	uint64_t own[PER_PROC];

	(void)state;
	assert_int_equal(fw_client_next(c, &own[0]), 0);
	assert_int_equal(pthread_create(&t, NULL, hold_lock, &h), 0);
	while (!atomic_load(&h.held))
		sleep_ms(1);
	kid = kid_start(c, kid_ids);
	pthread_join(t, NULL);
	for (int i = 1; i < PER_PROC; i++)
		assert_int_equal(fw_client_next(c, &own[i]), 0);
	check_all(&kid, 1, NULL, 0, own, PER_PROC);
	fw_client_close(c);
	fake_stop(f);
}

struct getter {
	struct fw_client *c;
	uint64_t id;
	int rc;
};

static void *get_one(void *arg)
{
	struct getter *g = arg;

	g->rc = fw_client_get(g->c, &g->id);
	return NULL;
}

/*
 * A fork while another thread's one-shot call waits for its reply (the
 * fake holds it): that call's lock is held across the round trip and is
 * not taken for the fork; the child's one-shot calls must not wait on it.
 * Before the fix the child's fw_client_get() waited for ever.
 */
static void test_fork_during_one_shot_call(void **state)
{
	struct fake *f = fake_start();
	struct fw_client *c = client_for(f, 1024, 256);
	struct getter g = {.c = c};
	struct kid kid;
	pthread_t t;
	uint64_t own[2];

	(void)state;
	assert_int_equal(fw_client_get(c, &own[0]), 0); /* the layout is known */
	atomic_store(&f->hold_op, FW_WIRE_OP_ID);
	assert_int_equal(pthread_create(&t, NULL, get_one, &g), 0);
	assert_true(fake_await_holding(f));
	kid = kid_start(c, kid_ids);
	atomic_store(&f->release, true);
	pthread_join(t, NULL);
	assert_int_equal(g.rc, 0);
	own[1] = g.id;
	check_all(&kid, 1, NULL, 0, own, 2);
	fw_client_close(c);
	fake_stop(f);
}

static int cmp_uuid(const void *a, const void *b)
{
	return memcmp(a, b, FW_UUID_LEN);
}

/*
 * fw_client_next_uuid7()'s buffer: after a first UUID (the buffer holds
 * the rest of a refill), two children and the parent take PER_PROC UUIDs
 * each. No UUID twice. Before the fix the children handed out the
 * parent's buffered UUIDs.
 */
static void test_fork_uuid7_buffer(void **state)
{
	struct fake *f = fake_start();
	struct fw_client *c = client_for(f, 1024, 256);
	uint8_t(*all)[FW_UUID_LEN] = calloc(3 * PER_PROC, FW_UUID_LEN);
	struct kid kids[2];
	ssize_t got[2];

	(void)state;
	assert_non_null(all);
	assert_int_equal(fw_client_next_uuid7(c, all[0]), 0);
	for (int i = 0; i < 2; i++)
		kids[i] = kid_start(c, kid_uuids);
	for (int i = 1; i < PER_PROC; i++)
		assert_int_equal(fw_client_next_uuid7(c, all[i]), 0);
	for (int i = 0; i < 2; i++)
		got[i] = kid_collect(&kids[i], all[(i + 1) * PER_PROC], PER_PROC * FW_UUID_LEN);
	for (int i = 0; i < 2; i++)
		assert_int_equal(got[i], PER_PROC * FW_UUID_LEN);
	qsort(all, 3 * PER_PROC, FW_UUID_LEN, cmp_uuid);
	for (int i = 1; i < 3 * PER_PROC; i++)
		if (!memcmp(all[i], all[i - 1], FW_UUID_LEN))
			fail_msg("UUID %d handed out twice", i);
	free(all);
	fw_client_close(c);
	fake_stop(f);
}

static int kid_close(struct fw_client *c, int out)
{
	(void)out;
	fw_client_close(c);
	return 0;
}

/*
 * fw_client_close() in a child (of a client whose refiller runs in the
 * parent) returns, and the parent's client still serves it and a later
 * child. Before the fix the child's close joined the parent's refiller.
 */
static void test_fork_close_in_child(void **state)
{
	struct fake *f = fake_start();
	struct fw_client *c = client_for(f, 1024, 256);
	uint64_t own[2];
	struct kid kid;

	(void)state;
	assert_int_equal(fw_client_next(c, &own[0]), 0);
	kid = kid_start(c, kid_close);
	assert_int_equal(kid_collect(&kid, NULL, 0), 0);
	kid = kid_start(c, kid_ids);
	assert_int_equal(fw_client_next(c, &own[1]), 0);
	assert_true(own[1] > own[0]);
	check_all(&kid, 1, NULL, 0, own, 2);
	fw_client_close(c);
	fake_stop(f);
}

/* ---- issue 49: the child's responder choice starts as a new client's ---- */

/* The child's view of the route, then one call on it (exit status says which failed). */
static int kid_fresh_route(struct fw_client *c, int out)
{
	struct fwc_route *r = &c->route;
	uint64_t id;

	(void)out;
	if (!r->s[0].healthy || !r->s[1].healthy)
		return 2;
	if (r->probe_started || r->probe_running)
		return 3;
	if (r->rtt_count != 0 || r->tokens != FW_ROUTE_TOKENS_CAP || r->hedges != 0)
		return 4;
	/* A call of its own: the silent one is asked first again, then hedged. */
	if (fw_client_get(c, &id) != 0)
		return 5;
	fw_client_close(c); /* joins the child's own probe thread, if any */
	return 0;
}

/*
 * A parent whose client marked its first responder (silent) unhealthy, runs
 * a probe thread and has round trips and hedges behind it, forks: the
 * child's client has every responder healthy, no probe thread, no RTT
 * sample and a full budget, and its calls work; the parent's state is its own.
 */
static void test_fork_fresh_health(void **state)
{
	struct fake *f = fake_start();
	uint16_t silent_port;
	int silent = -1;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	struct fw_client_opts o;
	struct fw_client *c = NULL;
	char a0[64], a1[64];
	const char *servers[] = {a0, a1};
	struct kid kid;
	uint64_t id;

	(void)state;
	silent = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(silent >= 0);
	assert_int_equal(bind(silent, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(silent, (struct sockaddr *)&sin, &len), 0);
	silent_port = ntohs(sin.sin_port);
	snprintf(a0, sizeof(a0), "127.0.0.1:%u", silent_port);
	snprintf(a1, sizeof(a1), "127.0.0.1:%u", f->port);
	fw_client_opts_init(&o);
	o.trusted = true;
	assert_int_equal(fw_client_open(servers, 2, &o, &c), 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(fw_client_get(c, &id), 0);
	assert_false(c->route.s[0].healthy);
	assert_true(c->route.probe_started);
	assert_true(c->route.rtt_count > 0);
	kid = kid_start(c, kid_fresh_route);
	assert_int_equal(kid_collect(&kid, NULL, 0), 0);
	assert_int_equal(fw_client_get(c, &id), 0);
	assert_false(c->route.s[0].healthy);
	fw_client_close(c);
	close(silent);
	fake_stop(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_fork_children_hand_out_their_own, kids_reap),
		cmocka_unit_test_teardown(test_fork_under_load, kids_reap),
		cmocka_unit_test_teardown(test_fork_during_refill, kids_reap),
		cmocka_unit_test_teardown(test_fork_with_lock_held, kids_reap),
		cmocka_unit_test_teardown(test_fork_during_one_shot_call, kids_reap),
		cmocka_unit_test_teardown(test_fork_uuid7_buffer, kids_reap),
		cmocka_unit_test_teardown(test_fork_close_in_child, kids_reap),
		cmocka_unit_test_teardown(test_fork_fresh_health, kids_reap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
