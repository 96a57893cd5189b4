/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Many fleet nodes with the real lib/fleet, in a few processes (issue 50):
 * each node its own identity, slots, store session and state (a directory
 * with its cache file and a state stamp), grouped PER_PROC to a worker
 * process, so that a crash is a SIGKILL of a process. Driven by
 * scripts/fleet-simulate.sh (the full runs) and test_fleet_simulate.sh (the
 * test command's short form), which start the registries.
 *
 *   fleet_simulate SCENARIO --connect STR --root PATH --dir DIR [options]
 *
 * SCENARIO:
 *   storm      NODES x SLOTS claim at once (in batches of --batch nodes every
 *              --batch-gap-ms); DIR/storm-half is created when half the slots
 *              hold a lease (the driver kills a registry leader then); then
 *              --steady-s seconds of steady state measure the registry's
 *              requests per node per minute; then one more slot is asked for
 *              (the 1,025th with 10 worker bits): it must find none.
 *   crashloop  every --period-s for --duration-s, SIGKILL processes holding
 *              --fraction % of the nodes and restart them on the same state.
 *   rolling    each process in turn: a graceful stop (SIGTERM), restart on
 *              the same state, wait until its slots hold leases; --rounds times.
 *   reboot     as rolling, but each restart on a new state (the cache gone,
 *              another state stamp: a restart that proves nothing).
 *
 * Output: a table on stdout; DIR/slots.log (every slot change every node
 * saw: the ranges the checker reads), DIR/series.dat (time, slots holding a
 * lease, free and stranded IDs in the store), DIR/procN.log (lib/fleet's
 * warnings). Exit 0 when every check holds, 1 when one fails, 2 on bad usage.
 *
 * Checks (after each scenario):
 *   overlap    no two holders of one worker ID with overlapping ranges: the
 *              nemesis checker's holders rule (scripts/nemesis/check.py) over
 *              leases: a holding is the range (floor, highest lease seen] a
 *              node's slot was published, a holder is one state (a restart
 *              on the same state is the same holder: its mark fences it);
 *              a graceful stop that released ends its holdings at its
 *              final mark (the floor the release wrote); ranges of two
 *              holders of one worker ID never overlap.
 *   free       (crashloop, rolling, reboot) the store never showed 0 free IDs.
 *   takeback   (crashloop) every slot of a restart on the same state took its
 *              worker ID back (the state's mark and cache prove it).
 *   storm      every slot held a lease; the extra slot found none, with
 *              lib/fleet's message naming the owners.
 *
 * The two steps that other branches change are each one function below:
 * sim_create_root (fw_fleet_init_store, as `flakectl fleet init`) and
 * sim_graceful_stop (final mark, then fw_fleet_stop_release).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "fw_err.h"
#include "fw_fleet.h"
#include "fw_fleet_rec.h"
#include "fw_fleet_store.h"
#include "fw_fleet_admin.h"
#include "fw_mark.h"

#define MAX_NODES 1024
#define MAX_PROCS 256
#define MAX_SLOTS 16
#define POLL_MS   100

struct opts {
	const char *scenario;
	const char *connect;
	const char *root;
	const char *dir;
	const char *label;
	uint32_t nodes, slots, per_proc, worker_bits;
	uint64_t lease_ms, renew_ms;
	uint32_t session_ms;
	uint32_t batch, batch_gap_ms;
	uint32_t steady_s, timeout_s;
	uint32_t duration_s, period_s, fraction, rounds;
	uint32_t extra;
	uint32_t seed;
	uint32_t datacenter; /* the root's value (one per root of a store) */
	bool etcd;
};

static struct opts O = {
	.nodes = 32,
	.slots = 4,
	.per_proc = 8,
	.worker_bits = 10,
	.lease_ms = 86400000,
	.renew_ms = 60000,
	.session_ms = 10000,
	.batch = 1024,
	.batch_gap_ms = 0,
	.steady_s = 60,
	.timeout_s = 300,
	.duration_s = 600,
	.period_s = 60,
	.fraction = 10,
	.rounds = 1,
	.extra = 1,
	.seed = 1,
	.label = "",
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static struct fw_layout sim_layout(void)
{
	struct fw_fleet_config c;
	fw_fleet_config_default(&c);
	c.layout.worker_bits = (uint8_t)O.worker_bits;
	c.layout.dc_bits = 2; /* one store, a root per scenario: each its own value (0-3) */
	c.layout.seq_bits = 12;
	c.layout.time_bits = (uint8_t)(63 - 2 - O.worker_bits - 12);
	return c.layout;
}

static uint64_t layout_now(void)
{
	return unix_ms() - sim_layout().epoch_ms;
}

/* ---- the two steps other branches change ---- */

/*
 * Creates the fleet's root with the simulation's layout (its worker bits),
 * datacenter value --datacenter and no reserved IDs, as `flakectl fleet init` does (the
 * same library call, over a store opened with the run's session): nodes
 * refuse a root no init made. A root already made for this layout is fine
 * (FW_FLEET_INIT_SAME).
 */
static int sim_create_root(char *err, size_t errlen)
{
	struct fw_fleet_etcd_opts eo = {.endpoints = O.connect, .session_ms = O.session_ms};
	struct fw_fleet_store_conf sc = {.etcd = O.etcd ? &eo : NULL,
					 .zookeeper = O.connect,
					 .root = O.root,
					 .session_ms = O.session_ms};
	struct fw_fleet_store *s = NULL;
	struct fw_layout l = sim_layout();
	int rc;

	rc = fw_fleet_store_open(&sc, &s, err, errlen);
	if (rc != 0)
		return rc;
	rc = s->ops->connect(s, 10000);
	if (rc != 0)
		snprintf(err, errlen, "init root %s: %s (%s)", O.root, fw_fleet_store_strerror(rc),
			 s->ops->last_error(s));
	else
		rc = fw_fleet_init_store(s, O.root, &l, O.datacenter, NULL, 10000, err, errlen);
	s->ops->free(s);
	return rc < 0 ? rc : 0;
}

/* The layout a node's mark fences: the simulation's, with the root's datacenter value. */
static struct fw_mark_layout sim_mark_layout(void)
{
	struct fw_layout l = sim_layout();
	return (struct fw_mark_layout){.epoch_ms = l.epoch_ms,
				       .datacenter_bits = l.dc_bits,
				       .worker_bits = l.worker_bits,
				       .sequence_bits = l.seq_bits,
				       .datacenter = O.datacenter};
}

/*
 * A graceful stop of one node (its process got SIGTERM), as a responder's:
 * the final mark is written first (a node issues no IDs, so now is at or
 * above everything it could have issued), then fw_fleet_stop_release gives
 * its worker IDs back above that mark and drops them from the cache. A
 * failed release leaves them leased (the next start on this state takes
 * them back; another state waits out lease_ms): the outcome line shows it.
 * Returns the final mark (layout ms) when every ID was released, else 0.
 */
#define SIM_STOP_RELEASES 1 /* a reboot's IDs are released too: its free check applies */
static uint64_t sim_graceful_stop(struct fw_fleet *f, const char *mark)
{
	struct fw_mark_layout ml = sim_mark_layout();
	uint64_t final = unix_ms();
	if (fw_mark_write(mark, final, &ml) != 0) {
		fw_fleet_stop(f);
		return 0;
	}
	/* >= 0: every held and retiring ID released above the final mark */
	return fw_fleet_stop_release(f, 5000) >= 0 ? final - ml.epoch_ms : 0;
}

/* ---- a worker process: PER_PROC nodes, one thread each ---- */

static volatile sig_atomic_t stop_flag;
static int slots_fd = -1; /* DIR/slots.log, O_APPEND: one write() per line */
static int proc_log_fd = -1;

static void emit(int fd, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 1;
	if (write(fd, line, (size_t)n) < 0) {
		/* nothing to do: the checker sees fewer lines */
	}
}

struct node {
	uint32_t idx;
	pthread_t th;
	char ident[64];
};

static void node_log(void *arg, enum fw_log_level lvl, const char *msg)
{
	if (lvl <= FW_LOG_WARNING)
		emit(proc_log_fd, "%llu %s %d %s\n", (unsigned long long)unix_ms(),
		     (const char *)arg, (int)lvl, msg);
}

/* The node's state: DIR/nodes/IDX/{gen,cache,mark}; gen counts new states (reboots). */
static uint32_t state_gen(uint32_t idx)
{
	char p[512];
	unsigned g = 0;
	snprintf(p, sizeof(p), "%s/nodes/%u/gen", O.dir, idx);
	FILE *fp = fopen(p, "r");
	if (fp) {
		if (fscanf(fp, "%u", &g) != 1)
			g = 0;
		fclose(fp);
	}
	return g;
}

static void *node_main(void *arg)
{
	struct node *n = arg;
	char cache[512], mark[512], stamp[128], err[2048];
	uint32_t gen = state_gen(n->idx);
	struct fw_fleet_config c;
	struct fw_fleet *f = NULL;
	struct fw_fleet_slot last[MAX_SLOTS];
	uint64_t t0 = mono_ms(), wait = (uint64_t)(n->idx / O.batch) * O.batch_gap_ms;
	int rc = -1, last_rc = 0;

	while (!stop_flag && mono_ms() - t0 < wait)
		sleep_ms(20);
	snprintf(cache, sizeof(cache), "%s/nodes/%u/cache", O.dir, n->idx);
	snprintf(mark, sizeof(mark), "%s/nodes/%u/mark", O.dir, n->idx);
	snprintf(stamp, sizeof(stamp), "sim:%s:state-%u", n->ident, gen);
	fw_fleet_config_default(&c);
	c.connect = O.connect;
	struct fw_fleet_etcd_opts eo = {.endpoints = O.connect, .session_ms = O.session_ms};
	c.etcd = O.etcd ? &eo : NULL;
	c.root = O.root;
	c.identity = n->ident;
	c.cache_file = cache;
	c.mark_file = mark;
	c.state_stamp = stamp;
	c.layout = sim_layout();
	c.datacenter = O.datacenter;
	c.lease_ms = O.lease_ms;
	c.renew_ms = O.renew_ms;
	c.session_timeout_ms = O.session_ms;
	c.start_wait_ms = 10000;
	c.log = (struct fw_log){node_log, n->ident};
	/* The mark first, as a responder's keeper writes it before it issues (a
	 * node issues nothing, so now is at or above anything it could have
	 * issued): the cache records it, and a restart on this state takes its
	 * worker IDs back only with a mark at or above that (issue 48). Without
	 * it a crash proves nothing and every crash-restart strands its IDs. */
	struct fw_mark_layout ml = sim_mark_layout();
	if (fw_mark_write(mark, unix_ms(), &ml) != 0) {
		emit(slots_fd, "%llu F %u %u %d %s\n", (unsigned long long)unix_ms(), n->idx, gen,
		     -EIO, "cannot write the mark");
		return NULL;
	}
	uint64_t s0 = mono_ms();
	/* a restart after a crash waits for the old session to end (identity in
	 * use); a full root waits for an ID to come back: retried, bounded by stop */
	while (!stop_flag) {
		if (fw_fleet_create(&c, O.slots, &f, err, sizeof(err)) != 0) {
			emit(slots_fd, "%llu F %u %u %d %s\n", (unsigned long long)unix_ms(),
			     n->idx, gen, -EINVAL, err);
			return NULL;
		}
		rc = fw_fleet_start(f, NULL, err, sizeof(err));
		if (rc == 0)
			break;
		fw_fleet_free(f);
		f = NULL;
		if (rc != last_rc) /* one line per kind of refusal */
			emit(slots_fd, "%llu F %u %u %d %s\n", (unsigned long long)unix_ms(),
			     n->idx, gen, rc, err);
		last_rc = rc;
		for (int i = 0; i < 10 && !stop_flag; i++)
			sleep_ms(50);
	}
	if (f == NULL)
		return NULL;
	struct fw_fleet_status st;
	fw_fleet_status(f, &st);
	emit(slots_fd, "%llu U %u %u %llu %llu %llu %llu\n", (unsigned long long)unix_ms(), n->idx,
	     gen, (unsigned long long)(mono_ms() - s0), (unsigned long long)st.takebacks,
	     (unsigned long long)st.claims, (unsigned long long)st.takeovers);
	memset(last, 0xff, sizeof(last));
	while (!stop_flag) {
		for (uint32_t i = 0; i < O.slots; i++) {
			struct fw_fleet_slot s;
			if (fw_fleet_slot(f, i, &s) != 0)
				continue;
			if (s.worker == last[i].worker && s.gen == last[i].gen &&
			    s.lease_ms == last[i].lease_ms && s.lost == last[i].lost)
				continue;
			last[i] = s;
			/* t S node gen slot worker floor lease source lost */
			emit(slots_fd, "%llu S %u %u %u %d %llu %llu %u %d\n",
			     (unsigned long long)unix_ms(), n->idx, gen, i, (int)s.worker,
			     (unsigned long long)s.floor_ms, (unsigned long long)s.lease_ms,
			     s.source, (int)s.lost);
		}
		sleep_ms(POLL_MS);
	}
	uint64_t released = sim_graceful_stop(f, mark);
	/* t D node gen released: the final mark every ID was released above, or 0 */
	emit(slots_fd, "%llu D %u %u %llu\n", (unsigned long long)unix_ms(), n->idx, gen,
	     (unsigned long long)released);
	fw_fleet_free(f);
	return NULL;
}

static void on_term(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static int worker_proc(uint32_t first, uint32_t count, int pno)
{
	static struct node nodes[MAX_NODES];
	char p[512];
	struct sigaction sa = {.sa_handler = on_term};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	snprintf(p, sizeof(p), "%s/proc%d.log", O.dir, pno);
	proc_log_fd = open(p, O_WRONLY | O_CREAT | O_APPEND, 0644);
	for (uint32_t k = 0; k < count; k++) {
		struct node *n = &nodes[k];
		n->idx = first + k;
		snprintf(n->ident, sizeof(n->ident), "sim-%04u", n->idx);
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, 256 * 1024);
		if (pthread_create(&n->th, &a, node_main, n) != 0)
			return 1;
		pthread_attr_destroy(&a);
	}
	for (uint32_t k = 0; k < count; k++)
		pthread_join(nodes[k].th, NULL);
	return 0;
}

/* ---- the controller ---- */

struct proc {
	pid_t pid;
	uint32_t first, count;
};

static struct proc procs[MAX_PROCS];
static uint32_t n_procs;

/* The controller stopped (SIGTERM, SIGINT): its worker processes go with it. */
static void on_controller_term(int sig)
{
	for (uint32_t p = 0; p < n_procs; p++)
		if (procs[p].pid > 0)
			kill(procs[p].pid, SIGKILL);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void spawn(uint32_t p)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		close(0);
		_exit(worker_proc(procs[p].first, procs[p].count, (int)p));
	}
	procs[p].pid = pid;
}

static void reap(uint32_t p, int sig, uint32_t max_s)
{
	if (procs[p].pid <= 0)
		return;
	kill(procs[p].pid, sig);
	uint64_t t0 = mono_ms();
	int status;
	while (waitpid(procs[p].pid, &status, WNOHANG) == 0) {
		if (mono_ms() - t0 > max_s * 1000ull) {
			kill(procs[p].pid, SIGKILL);
			waitpid(procs[p].pid, &status, 0);
			break;
		}
		sleep_ms(20);
	}
	procs[p].pid = 0;
}

/* What the controller knows of every slot, from slots.log. */
struct slotv {
	int32_t worker;
	uint64_t floor, lease;
	uint32_t gen;
};
static struct slotv view[MAX_NODES][MAX_SLOTS];
static FILE *slots_in;

/* A holding: one (worker, holder state) range seen by a node. A graceful
 * stop that released closes it at its final mark (the release's floor): a
 * later claim of that worker by the same state is a new holding. */
struct holding {
	int32_t worker;
	uint32_t node, gen;
	uint64_t floor, lease;
	bool closed;
};
static struct holding *hold;
static size_t n_hold, cap_hold;

/* counts per scenario from the U/F lines */
static uint64_t n_up, n_takeback, n_claim, n_takeover, n_full, n_identity_wait;
static uint64_t start_ms_sum, start_ms_max;
static char full_msg[2048];

static void add_holding(uint32_t node, uint32_t gen, int32_t w, uint64_t floor, uint64_t lease)
{
	for (size_t i = n_hold; i-- > 0;) {
		struct holding *h = &hold[i];
		if (h->worker == w && h->node == node && h->gen == gen && !h->closed) {
			if (lease > h->lease)
				h->lease = lease;
			if (floor < h->floor)
				h->floor = floor;
			return;
		}
	}
	if (n_hold == cap_hold) {
		cap_hold = cap_hold ? cap_hold * 2 : 4096;
		hold = realloc(hold, cap_hold * sizeof(*hold));
		if (hold == NULL)
			abort();
	}
	hold[n_hold++] = (struct holding){w, node, gen, floor, lease, false};
}

/* (node, gen) stopped and released every ID above @mark: its holdings end there. */
static void close_holdings(uint32_t node, uint32_t gen, uint64_t mark)
{
	for (size_t i = 0; i < n_hold; i++) {
		struct holding *h = &hold[i];
		if (h->node != node || h->gen != gen || h->closed)
			continue;
		uint64_t end = mark > h->floor ? mark : h->floor;
		if (h->lease > end)
			h->lease = end;
		h->closed = true;
	}
}

static void read_slots(void)
{
	char line[2048];
	while (fgets(line, sizeof(line), slots_in)) {
		unsigned long long t, a, b, c, d;
		unsigned node, gen, slot, src;
		int w, lost, rc;
		char ev;
		if (sscanf(line, "%llu %c", &t, &ev) != 2)
			continue;
		if (ev == 'S' &&
		    sscanf(line, "%llu S %u %u %u %d %llu %llu %u %d", &t, &node, &gen, &slot, &w,
			   &a, &b, &src, &lost) == 9 &&
		    node < MAX_NODES && slot < MAX_SLOTS) {
			view[node][slot] = (struct slotv){w, a, b, gen};
			if (w >= 0 && b > 0)
				add_holding(node, gen, w, a, b);
		} else if (ev == 'U' && sscanf(line, "%llu U %u %u %llu %llu %llu %llu", &t, &node,
					       &gen, &a, &b, &c, &d) == 7) {
			n_up++;
			start_ms_sum += a;
			if (a > start_ms_max)
				start_ms_max = a;
			n_takeback += b;
			n_claim += c;
			n_takeover += d;
		} else if (ev == 'D' &&
			   sscanf(line, "%llu D %u %u %llu", &t, &node, &gen, &a) == 4) {
			if (a > 0)
				close_holdings(node, gen, a);
		} else if (ev == 'F' &&
			   sscanf(line, "%llu F %u %u %d", &t, &node, &gen, &rc) == 4) {
			if (rc == FW_EFLEET_FULL) {
				n_full++;
				char *m = strchr(line, ' ');
				for (int k = 0; k < 4 && m; k++)
					m = strchr(m + 1, ' ');
				if (m && !full_msg[0])
					snprintf(full_msg, sizeof(full_msg), "%s", m + 1);
			} else if (rc == FW_EFLEET_IDENTITY)
				n_identity_wait++;
		}
	}
	clearerr(slots_in);
}

static uint32_t holding_now(void)
{
	uint64_t now = layout_now();
	uint32_t n = 0;
	for (uint32_t p = 0; p < n_procs; p++) {
		if (procs[p].pid <= 0)
			continue;
		for (uint32_t i = procs[p].first; i < procs[p].first + procs[p].count; i++)
			for (uint32_t s = 0; s < O.slots; s++)
				if (view[i][s].worker >= 0 && view[i][s].lease > now)
					n++;
	}
	return n;
}

static bool proc_holding(uint32_t p)
{
	uint64_t now = layout_now();
	for (uint32_t i = procs[p].first; i < procs[p].first + procs[p].count; i++)
		for (uint32_t s = 0; s < O.slots; s++)
			if (view[i][s].worker < 0 || view[i][s].lease <= now ||
			    view[i][s].gen != state_gen(i))
				return false;
	return true;
}

/* The store's view: free (no live lease) and stranded (a live lease no live slot holds). */
struct store_view {
	int ok;
	uint32_t free, stranded, owned;
};

static struct store_view store_read(void)
{
	struct store_view v = {0};
	struct fw_fleet_list l;
	char err[1024];
	if (fw_fleet_list_read(O.connect, O.root, 5000, &l, err, sizeof(err)) != 0) {
		v.ok = -1;
		return v;
	}
	uint32_t total = 1u << O.worker_bits;
	static bool live[1u << 16];
	memset(live, 0, sizeof(bool) * total);
	uint64_t now = layout_now();
	for (uint32_t p = 0; p < n_procs; p++) {
		if (procs[p].pid <= 0)
			continue;
		for (uint32_t i = procs[p].first; i < procs[p].first + procs[p].count; i++)
			for (uint32_t s = 0; s < O.slots; s++)
				if (view[i][s].worker >= 0 && view[i][s].lease > now)
					live[view[i][s].worker] = true;
	}
	uint64_t snow = l.server_unix - l.layout.epoch_ms;
	for (uint32_t i = 0; i < l.n; i++) {
		const struct fw_fleet_entry *e = &l.v[i];
		if (!e->owner[0] || e->lease_ms <= snow)
			continue;
		v.owned++;
		if (e->worker < total && !live[e->worker])
			v.stranded++;
	}
	v.free = total - v.owned;
	fw_fleet_list_free(&l);
	return v;
}

static FILE *series;
static uint64_t scen_t0;
static uint32_t min_free = UINT32_MAX, max_stranded;

static void sample(bool with_store)
{
	read_slots();
	struct store_view v = {.ok = 1};
	if (with_store) {
		v = store_read();
		if (v.ok == 0) {
			if (v.free < min_free)
				min_free = v.free;
			if (v.stranded > max_stranded)
				max_stranded = v.stranded;
		}
	}
	if (v.ok == 0)
		fprintf(series, "%.1f %u %u %u\n", (mono_ms() - scen_t0) / 1000.0, holding_now(),
			v.free, v.stranded);
	else
		fprintf(series, "%.1f %u - -\n", (mono_ms() - scen_t0) / 1000.0, holding_now());
	fflush(series);
}

/* Registry requests so far, summed over the servers: ZooKeeper's `srvr`
 * Received, etcd's grpc_server_started_total (the JSON gateway's calls). */
static int tcp_ask(const char *host, int port, const char *req, char *buf, size_t cap)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct timeval tv = {2, 0};
	size_t got = 0;
	ssize_t r;
	if (fd < 0)
		return -1;
	inet_pton(AF_INET, host, &a.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		close(fd);
		return -1;
	}
	while (got + 1 < cap && (r = read(fd, buf + got, cap - 1 - got)) > 0)
		got += (size_t)r;
	buf[got] = 0;
	close(fd);
	return 0;
}

static int64_t registry_requests(void)
{
	static char buf[1 << 20];
	char list[1024], *save = NULL;
	int64_t total = 0;
	snprintf(list, sizeof(list), "%s", O.connect);
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char host[64];
		int port;
		const char *hp = strstr(t, "://") ? strstr(t, "://") + 3 : t;
		if (sscanf(hp, "%63[^:]:%d", host, &port) != 2)
			return -1;
		if (!O.etcd) {
			if (tcp_ask(host, port, "srvr", buf, sizeof(buf)) != 0)
				continue; /* a killed server: its count is gone */
			const char *r = strstr(buf, "Received: ");
			if (r)
				total += strtoll(r + 10, NULL, 10);
		} else {
			char req[256];
			snprintf(req, sizeof(req), "GET /metrics HTTP/1.0\r\nHost: %s:%d\r\n\r\n",
				 host, port);
			if (tcp_ask(host, port, req, buf, sizeof(buf)) != 0)
				continue;
			for (char *l = buf; (l = strstr(l, "\ngrpc_server_started_total{"));) {
				l++;
				char *sp = strchr(l, ' ');
				if (sp)
					total += (int64_t)strtod(sp + 1, NULL);
			}
		}
	}
	return total;
}

static int failures;

static void verdict(const char *check, bool ok, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("%s check %-9s %s: %s\n", O.label, check, ok ? "ok" : "FAILED", msg);
	if (!ok)
		failures++;
}

/* The holders rule over every holding logged so far. */
static void check_overlap(void)
{
	size_t bad = 0, pairs = 0;
	for (size_t i = 0; i < n_hold; i++)
		for (size_t j = i + 1; j < n_hold; j++) {
			const struct holding *a = &hold[i], *b = &hold[j];
			if (a->worker != b->worker || (a->node == b->node && a->gen == b->gen))
				continue;
			pairs++;
			if (a->lease <= b->floor || b->lease <= a->floor)
				continue;
			if (bad++ < 5)
				printf("  overlap: worker %d held by sim-%04u state %u (%llu, "
				       "%llu] and "
				       "sim-%04u state %u (%llu, %llu]\n",
				       a->worker, a->node, a->gen, (unsigned long long)a->floor,
				       (unsigned long long)a->lease, b->node, b->gen,
				       (unsigned long long)b->floor, (unsigned long long)b->lease);
		}
	verdict("overlap", bad == 0,
		"%zu holdings, %zu pairs of holders of one worker ID, %zu "
		"overlapping",
		n_hold, pairs, bad);
}

static void stop_all(void)
{
	for (uint32_t p = 0; p < n_procs; p++)
		if (procs[p].pid > 0)
			kill(procs[p].pid, SIGTERM);
	for (uint32_t p = 0; p < n_procs; p++)
		reap(p, SIGTERM, 20);
}

/* Waits until every running process's slots hold leases (or the timeout). */
static bool wait_all_holding(uint64_t max_ms, uint32_t want, bool with_store)
{
	uint64_t t0 = mono_ms(), last = 0;
	while (mono_ms() - t0 < max_ms) {
		read_slots();
		if (mono_ms() - last >= 1000) {
			sample(with_store);
			last = mono_ms();
		}
		if (holding_now() >= want)
			return true;
		sleep_ms(100);
	}
	return false;
}

static void mkdirs(void)
{
	char p[512];
	mkdir(O.dir, 0755);
	snprintf(p, sizeof(p), "%s/nodes", O.dir);
	mkdir(p, 0755);
	for (uint32_t i = 0; i < O.nodes; i++) {
		snprintf(p, sizeof(p), "%s/nodes/%u", O.dir, i);
		mkdir(p, 0755);
	}
}

static void new_state(uint32_t idx)
{
	char p[512];
	uint32_t g = state_gen(idx) + 1;
	snprintf(p, sizeof(p), "%s/nodes/%u/cache", O.dir, idx);
	unlink(p);
	snprintf(p, sizeof(p), "%s/nodes/%u/mark", O.dir, idx);
	unlink(p);
	snprintf(p, sizeof(p), "%s/nodes/%u/mark" FW_MARK_RECORD_SUFFIX, O.dir, idx);
	unlink(p);
	snprintf(p, sizeof(p), "%s/nodes/%u/gen", O.dir, idx);
	FILE *fp = fopen(p, "w");
	if (fp) {
		fprintf(fp, "%u\n", g);
		fclose(fp);
	}
}

static void reset_counts(void)
{
	n_up = n_takeback = n_claim = n_takeover = n_full = n_identity_wait = 0;
	start_ms_sum = start_ms_max = 0;
	min_free = UINT32_MAX;
	max_stranded = 0;
}

static void print_starts(const char *what)
{
	printf("%s %-10s starts %llu: taken back %llu, claimed %llu, taken over %llu; waited for "
	       "the old session %llu, found the root full %llu; start ms mean %llu max %llu\n",
	       O.label, what, (unsigned long long)n_up, (unsigned long long)n_takeback,
	       (unsigned long long)n_claim, (unsigned long long)n_takeover,
	       (unsigned long long)n_identity_wait, (unsigned long long)n_full,
	       (unsigned long long)(n_up ? start_ms_sum / n_up : 0),
	       (unsigned long long)start_ms_max);
}

static int scenario_storm(uint32_t total)
{
	char p[512];
	bool half = false;
	uint64_t t0 = mono_ms(), t_all = 0, last = 0;
	for (uint32_t q = 0; q < n_procs; q++)
		spawn(q);
	while (mono_ms() - t0 < O.timeout_s * 1000ull) {
		read_slots();
		uint32_t h = holding_now();
		if (mono_ms() - last >= 500) {
			sample(false);
			last = mono_ms();
		}
		if (!half && h * 2 >= total) {
			half = true;
			snprintf(p, sizeof(p), "%s/storm-half", O.dir);
			FILE *fp = fopen(p, "w");
			if (fp) {
				fprintf(fp, "%.1f\n", (mono_ms() - scen_t0) / 1000.0);
				fclose(fp);
			}
			printf("%s storm      half of the slots (%u) hold a lease at %.1f s\n",
			       O.label, h, (mono_ms() - t0) / 1000.0);
		}
		if (h >= total) {
			t_all = mono_ms() - t0;
			break;
		}
		sleep_ms(50);
	}
	read_slots();
	print_starts("storm");
	verdict("storm", t_all > 0, "%u nodes x %u slots: %u of %u slots hold a lease, %s %.1f s",
		O.nodes, O.slots, holding_now(), total, t_all ? "all after" : "timeout",
		(t_all ? t_all : mono_ms() - t0) / 1000.0);
	/* the store's view: IDs leased that no running node holds (a claim
	 * whose reply was lost strands its ID for lease_ms) */
	struct store_view sv = store_read();
	if (sv.ok == 0)
		printf("%s storm      the store: %u IDs leased, %u of them by no running node's "
		       "slot, %u free\n",
		       O.label, sv.owned, sv.stranded, sv.free);
	/* steady: no starts, renewals only (measured whether or not every slot
	 * got a lease: the failure is the verdict above) */
	sleep_ms(2000);
	int64_t r0 = registry_requests();
	uint64_t m0 = mono_ms();
	while (mono_ms() - m0 < O.steady_s * 1000ull) {
		sleep_ms(500);
		if (mono_ms() - last >= 1000) {
			sample(false);
			last = mono_ms();
		}
	}
	int64_t r1 = registry_requests();
	double mins = (mono_ms() - m0) / 60000.0;
	if (r0 >= 0 && r1 >= r0)
		printf("%s steady     %.1f min: %lld registry requests, %.1f per node per minute "
		       "(renew_ms %llu)\n",
		       O.label, mins, (long long)(r1 - r0), (r1 - r0) / (double)O.nodes / mins,
		       (unsigned long long)O.renew_ms);
	/* the extra slot: one more node with O.extra slots; it must find none */
	if (O.extra) {
		struct fw_fleet_config c;
		struct fw_fleet *f = NULL;
		char err[4096] = "";
		struct fw_fleet_etcd_opts eo = {.endpoints = O.connect, .session_ms = O.session_ms};
		fw_fleet_config_default(&c);
		c.connect = O.connect;
		c.etcd = O.etcd ? &eo : NULL;
		c.root = O.root;
		c.identity = "sim-extra";
		c.layout = sim_layout();
		c.datacenter = O.datacenter;
		c.lease_ms = O.lease_ms;
		c.renew_ms = O.renew_ms;
		c.session_timeout_ms = O.session_ms;
		/* every ID is held when nodes x slots fill the worker bits; else the
		 * extra node asks for one more than the IDs left */
		uint32_t want = (1u << O.worker_bits) - total + O.extra;
		char needs[64];
		snprintf(needs, sizeof(needs), "needs %u worker ID", want);
		int rc = want > FW_FLEET_SLOTS_MAX
				 ? -EINVAL
				 : fw_fleet_create(&c, want, &f, err, sizeof(err));
		if (rc == 0)
			rc = fw_fleet_start(f, NULL, err, sizeof(err));
		fw_fleet_free(f);
		printf("%s extra      slot %u: %s\n%s   %.360s%s\n", O.label,
		       (1u << O.worker_bits) + 1,
		       rc == FW_EFLEET_FULL ? "none left" : fw_strerror(rc), O.label, err,
		       strlen(err) > 360 ? " ..." : "");
		verdict("extra", rc == FW_EFLEET_FULL && strstr(err, needs) != NULL,
			"slot %u refused (FW_EFLEET_FULL, \"%s\", naming the owners): %s",
			(1u << O.worker_bits) + 1, needs, rc == FW_EFLEET_FULL ? "yes" : "no");
	}
	return 0;
}

static int scenario_restarts(uint32_t total, const char *kind)
{
	bool crash = !strcmp(kind, "crashloop"), reboot = !strcmp(kind, "reboot");
	uint64_t last = 0;
	for (uint32_t q = 0; q < n_procs; q++)
		spawn(q);
	if (!wait_all_holding(O.timeout_s * 1000ull, total, true)) {
		verdict("start", false, "not every slot holds a lease within %u s", O.timeout_s);
		return 1;
	}
	print_starts("first");
	reset_counts();
	uint64_t t0 = mono_ms(), worst_back = 0;
	srand(O.seed);
	uint32_t rounds = crash ? O.duration_s / O.period_s : O.rounds * n_procs;
	for (uint32_t r = 0; r < rounds; r++) {
		uint32_t pick[MAX_PROCS], np = 0;
		uint64_t rt = mono_ms();
		if (crash) {
			/* processes holding fraction % of the nodes, at random */
			uint32_t want = (O.nodes * O.fraction + 99) / 100, got = 0;
			bool used[MAX_PROCS] = {false};
			while (got < want && np < n_procs) {
				uint32_t q = (uint32_t)rand() % n_procs;
				if (used[q])
					continue;
				used[q] = true;
				pick[np++] = q;
				got += procs[q].count;
			}
			for (uint32_t k = 0; k < np; k++)
				reap(pick[k], SIGKILL, 5);
		} else {
			pick[np++] = r % n_procs;
			reap(pick[0], SIGTERM, 20);
			if (reboot)
				for (uint32_t i = 0; i < procs[pick[0]].count; i++)
					new_state(procs[pick[0]].first + i);
		}
		/* what the stopped runs published is theirs: forget it, so that
		 * "back" means the new run's own slots */
		read_slots();
		for (uint32_t k = 0; k < np; k++)
			for (uint32_t i = 0; i < procs[pick[k]].count; i++)
				for (uint32_t s = 0; s < O.slots; s++)
					view[procs[pick[k]].first + i][s].worker = -1;
		for (uint32_t k = 0; k < np; k++)
			spawn(pick[k]);
		/* back: every restarted process's slots hold leases again */
		for (;;) {
			read_slots();
			bool all = true;
			for (uint32_t k = 0; k < np; k++)
				all = all && proc_holding(pick[k]);
			if (mono_ms() - last >= 1000) {
				sample(true);
				last = mono_ms();
			}
			if (all || mono_ms() - rt > O.timeout_s * 1000ull)
				break;
			sleep_ms(100);
		}
		if (mono_ms() - rt > worst_back)
			worst_back = mono_ms() - rt;
		if (crash)
			while (mono_ms() - rt < O.period_s * 1000ull) {
				if (mono_ms() - last >= 1000) {
					sample(true);
					last = mono_ms();
				}
				sleep_ms(200);
			}
	}
	read_slots();
	sample(true);
	print_starts(kind);
	const char *how = crash    ? "SIGKILL, restart on the same state"
			  : reboot ? "graceful stop, restart on a new state (proves nothing)"
				   : "graceful stop, restart on the same state";
	/* taken back: every restarted slot proved its IDs (the same state);
	 * released: none had to wait out a lease (a graceful stop gave them
	 * back and the new run claimed free ones); else the old IDs stayed
	 * leased until lease_ms ran out (taken over, or the root was full) */
	const char *outcome = n_takeback == n_up * O.slots ? "same state: taken back"
			      : n_takeover || n_full || (reboot && !SIM_STOP_RELEASES)
				      ? "unprovable: stranded for lease_ms"
			      : crash ? "same state: taken back in part (the rest claimed anew)"
				      : "graceful: released";
	printf("%s %-10s %u restarts of %u nodes (%s) in %.0f s, lease_ms %llu: %s; slowest "
	       "back %.1f s; min free %u, max leased by no running node %u\n",
	       O.label, kind, rounds, crash ? (O.nodes * O.fraction + 99) / 100 : O.per_proc, how,
	       (mono_ms() - t0) / 1000.0, (unsigned long long)O.lease_ms, outcome,
	       worst_back / 1000.0, min_free == UINT32_MAX ? 0 : min_free, max_stranded);
	if (!reboot || SIM_STOP_RELEASES)
		verdict("free", min_free != UINT32_MAX && min_free > 0,
			"free IDs never 0 (least seen %u)", min_free == UINT32_MAX ? 0 : min_free);
	if (crash) /* the same state with its mark: every restart proves its IDs */
		verdict("takeback", n_takeback == n_up * O.slots,
			"%llu of %llu restarted slots took their worker IDs back",
			(unsigned long long)n_takeback, (unsigned long long)n_up * O.slots);
	verdict("back", holding_now() == total, "%u of %u slots hold a lease at the end",
		holding_now(), total);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fleet_simulate storm|crashloop|rolling|reboot --connect STR --root PATH "
		"--dir DIR\n"
		"  [--etcd] [--nodes N] [--slots S] [--per-proc K] [--worker-bits B] [--lease-ms "
		"L]\n"
		"  [--renew-ms R] [--session-ms S] [--batch N] [--batch-gap-ms G] [--steady-s S]\n"
		"  [--timeout-s S] [--duration-s S] [--period-s S] [--fraction PCT] [--rounds R]\n"
		"  [--extra N] [--seed N] [--label TEXT] [--datacenter D]\n");
}

/* The options: a string (str), a flag (flag), or a number into a uint32_t
 * (u32) or uint64_t (u64) field of O. */
static const struct simopt {
	const char *name;
	const char **str;
	bool *flag;
	uint32_t *u32;
	uint64_t *u64;
} OPTS[] = {
	{"connect", &O.connect},
	{"root", &O.root},
	{"dir", &O.dir},
	{"label", &O.label},
	{"etcd", NULL, &O.etcd},
	{"nodes", .u32 = &O.nodes},
	{"slots", .u32 = &O.slots},
	{"per-proc", .u32 = &O.per_proc},
	{"worker-bits", .u32 = &O.worker_bits},
	{"lease-ms", .u64 = &O.lease_ms},
	{"renew-ms", .u64 = &O.renew_ms},
	{"session-ms", .u32 = &O.session_ms},
	{"batch", .u32 = &O.batch},
	{"batch-gap-ms", .u32 = &O.batch_gap_ms},
	{"steady-s", .u32 = &O.steady_s},
	{"timeout-s", .u32 = &O.timeout_s},
	{"duration-s", .u32 = &O.duration_s},
	{"period-s", .u32 = &O.period_s},
	{"fraction", .u32 = &O.fraction},
	{"rounds", .u32 = &O.rounds},
	{"extra", .u32 = &O.extra},
	{"seed", .u32 = &O.seed},
	{"datacenter", .u32 = &O.datacenter},
};

int main(int argc, char **argv)
{
	struct option lo[FW_ARRAY_SIZE(OPTS) + 1];
	for (size_t i = 0; i < FW_ARRAY_SIZE(OPTS); i++)
		lo[i] = (struct option){OPTS[i].name, OPTS[i].flag ? 0 : 1, NULL, (int)i};
	lo[FW_ARRAY_SIZE(OPTS)] = (struct option){0, 0, 0, 0};
	int ch;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (ch < 0 || (size_t)ch >= FW_ARRAY_SIZE(OPTS)) {
			usage();
			return 2;
		}
		const struct simopt *o = &OPTS[ch];
		char *end = NULL;
		unsigned long long v = optarg ? strtoull(optarg, &end, 10) : 0;
		if (o->flag) {
			*o->flag = true;
		} else if (o->str) {
			*o->str = optarg;
		} else if (!*optarg || *end || (o->u32 && v > UINT32_MAX)) {
			fprintf(stderr, "fleet_simulate: --%s %s: not a number%s\n", o->name,
				optarg, o->u32 ? " of 0-4294967295" : "");
			return 2;
		} else if (o->u32) {
			*o->u32 = (uint32_t)v;
		} else {
			*o->u64 = v;
		}
	}
	if (optind != argc - 1 || !O.connect || !O.root || !O.dir) {
		usage();
		return 2;
	}
	O.scenario = argv[optind];
	uint32_t total = O.nodes * O.slots;
	if (O.nodes < 1 || O.nodes > MAX_NODES || O.slots < 1 || O.slots > MAX_SLOTS ||
	    O.per_proc < 1 || (O.nodes + O.per_proc - 1) / O.per_proc > MAX_PROCS ||
	    O.worker_bits < 1 || O.worker_bits > 16 || total > (1u << O.worker_bits) ||
	    O.batch < 1 || O.period_s < 1) {
		fprintf(stderr,
			"fleet_simulate: nodes 1-%d, slots 1-%d, at most %d processes, "
			"nodes x slots <= 2^worker_bits (1-16)\n",
			MAX_NODES, MAX_SLOTS, MAX_PROCS);
		return 2;
	}
	if (!O.label[0])
		O.label = O.etcd ? "etcd" : "zk";
	/* each node holds a few descriptors (its session's sockets, the cache) */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	mkdirs();
	signal(SIGTERM, on_controller_term);
	signal(SIGINT, on_controller_term);
	char p[512], err[2048];
	snprintf(p, sizeof(p), "%s/slots.log", O.dir);
	slots_fd = open(p, O_WRONLY | O_CREAT | O_APPEND, 0644);
	slots_in = fopen(p, "r");
	snprintf(p, sizeof(p), "%s/series.dat", O.dir);
	series = fopen(p, "w");
	if (slots_fd < 0 || !slots_in || !series) {
		fprintf(stderr, "fleet_simulate: cannot write under %s\n", O.dir);
		return 2;
	}
	fseek(slots_in, 0, SEEK_END);
	fprintf(series, "# seconds slots_holding free_ids stranded_ids (%s %s)\n", O.label,
		O.scenario);
	if (sim_create_root(err, sizeof(err)) != 0) {
		fprintf(stderr, "fleet_simulate: %s\n", err);
		return 1;
	}
	for (uint32_t i = 0; i < O.nodes; i += O.per_proc) {
		procs[n_procs].first = i;
		procs[n_procs].count = FW_MIN(O.per_proc, O.nodes - i);
		n_procs++;
	}
	printf("%s %s: %u nodes x %u slots in %u processes of %u, worker_bits %u, lease_ms "
	       "%llu, renew_ms %llu, session %u ms, batches of %u every %u ms\n",
	       O.label, O.scenario, O.nodes, O.slots, n_procs, O.per_proc, O.worker_bits,
	       (unsigned long long)O.lease_ms, (unsigned long long)O.renew_ms, O.session_ms,
	       O.batch, O.batch_gap_ms);
	fflush(stdout);
	scen_t0 = mono_ms();
	int rc;
	if (!strcmp(O.scenario, "storm"))
		rc = scenario_storm(total);
	else if (!strcmp(O.scenario, "crashloop") || !strcmp(O.scenario, "rolling") ||
		 !strcmp(O.scenario, "reboot"))
		rc = scenario_restarts(total, O.scenario);
	else {
		usage();
		return 2;
	}
	stop_all();
	read_slots();
	check_overlap();
	(void)rc;
	printf("%s %s: %s\n", O.label, O.scenario, failures ? "FAILED" : "every check holds");
	return failures ? 1 : 0;
}
