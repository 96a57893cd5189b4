/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fleet registry: worker IDs claimed through a store (ZooKeeper or etcd), with
 * time-fenced leases, so that no worker ID is typed by hand. Operating a
 * fleet: doc/fleet.md. The rule and its proof, step by step against the
 * registry interface: doc/design/fleet-safety.md.
 *
 * lib/fleet exports this header and fw_fleet_store.h (the store interface
 * and fw_fleet_store_open); what each concept's files are: the comment at
 * the top of lib/fleet/meson.build. The rest (internal/) is the library's own.
 *
 * Records under the root (the cluster name, e.g. /flakewire/dc1), text in
 * internal/fw_fleet_rec.h: the layout every member must share (a mismatch refuses to
 * start); ROOT/workers/NNNNN, one per worker ID ever claimed, never deleted
 * (it holds the floor): owner, token, lease_until, floor; ROOT/nodes/IDENTITY,
 * the liveness of one live process (`flakectl fleet ls` shows it).
 *
 * The safety rule:
 *  1. an owner never issues W above the lease_until the store confirmed for
 *     it (a versioned write that succeeded, or a read showing its token);
 *  2. a new owner issues W only above its floor: taking W over writes
 *     floor = old lease_until with a versioned (compare-and-set) update;
 *     a release writes floor = max(floor, lease_until);
 *  3. renewal is a versioned update: after a takeover it fails, the old
 *     owner keeps its old limit and stops there.
 *
 * Threads: the registry runs its own thread (a store's calls block for up
 * to a session timeout while it is unreachable, so they must not run where
 * the mark is kept). Its owner (flakewire's control thread, flakesock's
 * keeper thread) reads the published per-slot results with fw_fleet_slot(),
 * a copy taken under a mutex, and applies them to the timekeeper
 * (fw_keeper_set_worker / fw_keeper_set_lease). Workers never see this
 * module. All functions here may be called from any one thread; they are
 * serialised internally. Every wait and deadline is on CLOCK_MONOTONIC: a
 * step of the wall clock moves no renewal.
 *
 * Messages go through cfg.log, a struct fw_log (nothing is printed otherwise); every error
 * also returns one line in @err where a function takes one.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"
#include "fw_fleet_store.h"
#include "fw_layout.h"
#include "fw_log.h"

#define FW_FLEET_IDENTITY_MAX 128 /* longest identity, NUL included */
#define FW_FLEET_SLOTS_MAX    256
#define FW_FLEET_WORKER_NONE  (-1)

struct fw_fleet_config {
	const char *connect; /* ZooKeeper "host:port,host:port"; required unless etcd */
	/* ZooKeeper digest credentials "user:password" (NULL: none, open ACLs):
	 * the fleet's znodes are created writable by that principal only,
	 * readable by anyone; copied (and zeroed when freed) by the store */
	const char *zk_auth;
	/* non-NULL: the registry is etcd with these options (connect is not looked at) */
	const struct fw_fleet_etcd_opts *etcd;
	const char *root;     /* "/flakewire/dc1": absolute, no trailing '/' */
	const char *identity; /* this node, stable across restarts: [A-Za-z0-9._:-]+ */
	/* "" or NULL: no cache. A cache belongs to one state: fw_fleet_start
	 * locks "CACHE_FILE.lock" (fw_state_lock_file) for the process's life,
	 * and a second process on the same cache file refuses to start. */
	const char *cache_file;
	/* An older default cache (the upgrade from /var/lib/flakewire/fleet;
	 * NULL or "": none): read, only when cache_file does not exist, as the
	 * previous run's proof. Its stamp must be this state's
	 * (fw_fleet_cache_read's -ESTALE otherwise), so a cache another state
	 * wrote there proves nothing. Never written nor locked. */
	const char *legacy_cache_file;
	/* fw_state_lock_stamp of the state this process holds locked (NULL or
	 * "": none). Without it no cache is this process's own: nothing is
	 * taken back and a start while the store is down has no worker ID.
	 * Hold that lock until fw_fleet_free returned: the liveness record
	 * names the stamp, and the next process on the state, holding the
	 * lock, replaces it at start rather than wait for this one's session
	 * to end (the lock proves this one gone). */
	const char *state_stamp;
	/* The state's mark file (fw_mark.h; NULL or "": none). Each cache write
	 * records the mark it holds then, and a start takes back (or starts from)
	 * a cache that recorded one only when this file holds a mark at or above
	 * it: a deleted or lowered mark proves nothing. */
	const char *mark_file;
	struct fw_layout layout;
	/* [id] datacenter: the root must serve this value (fw_fleet_start refuses otherwise) */
	uint32_t datacenter;
	uint64_t lease_ms;           /* lease length (default 24 h) */
	uint64_t renew_ms;           /* renew this often (default 60 s) */
	uint32_t session_timeout_ms; /* ZooKeeper session timeout (default 10 s) */
	uint32_t start_wait_ms;      /* fw_fleet_start waits this long for ZooKeeper */
	uint32_t max_offset_ms;      /* clock offset vs ZooKeeper above this: warned */
	/* Local clock in unix ms (NULL: CLOCK_REALTIME). Leases are written from it. */
	uint64_t (*now_ms)(void *arg);
	void *now_arg;
	/* Log sink (lib/common/fw_log.h; {NULL, NULL}: silent): one line per
	 * call, FW_LOG_ERR, FW_LOG_WARNING or FW_LOG_INFO. */
	struct fw_log log;
	/* Too few worker IDs free at start (FW_EFLEET_FULL): false, fw_fleet_start
	 * fails; true (the responders), it starts anyway holding none, every slot
	 * answering NO_LEASE (so the node is not ready), with one WARN saying how
	 * many IDs are free and stranded and when the first stranded one comes
	 * back; the thread then claims for every slot at once (all or none, so a
	 * waiting node holds no ID it cannot use) at each round, from the first
	 * round after enough are free (released, or a lease ended). */
	bool start_when_full;
};

/* Fills *cfg with the defaults above (connect, root, identity NULL). */
FW_API void fw_fleet_config_default(struct fw_fleet_config *cfg);

/* Where a slot's current lease comes from. */
enum fw_fleet_source {
	FW_FLEET_SRC_NONE = 0,  /* no worker ID: answer NO_LEASE */
	FW_FLEET_SRC_STORE = 1, /* confirmed by the store (ZooKeeper or etcd) in this run */
	FW_FLEET_SRC_CACHE = 2, /* from the cache file (the store was down at start) */
};

/* One slot (worker lcore or thread): what it may issue under. */
struct fw_fleet_slot {
	int32_t worker;    /* worker ID, FW_FLEET_WORKER_NONE: none (issue nothing) */
	uint64_t gen;      /* bumped whenever worker or floor changes (a swap to apply) */
	uint64_t lease_ms; /* confirmed lease_until, layout ms: never issue above (0: none) */
	uint64_t floor_ms; /* layout ms: issue only above */
	uint32_t source;   /* enum fw_fleet_source */
	bool lost;         /* the worker ID was taken over: lease_ms is the old, final limit */
};

/* Counters and the clock check. */
struct fw_fleet_status {
	bool connected; /* the ZooKeeper session is up */
	/* true while the root is missing, of another generation without a newer
	 * fence, or the store went back (a restore): no claim, takeover or renewal
	 * until an operator's `flakectl fleet fence` (issuing goes on within the
	 * confirmed leases); false too while the store was never reached */
	bool root_stopped;
	bool started_from_cache;
	uint64_t last_renew_unix; /* local unix ms of the last successful renewal round */
	int64_t offset_ms;        /* local clock minus ZooKeeper's (mtime), last renewal */
	bool offset_valid;
	bool offset_over;        /* |offset_ms| > max_offset_ms */
	uint64_t renewals;       /* successful znode renewals */
	uint64_t renew_failures; /* failed renewal rounds */
	uint64_t claims;         /* worker IDs claimed (created or free) */
	uint64_t takebacks;      /* taken back by identity */
	uint64_t takeovers;      /* expired ones taken over */
	uint64_t lost;           /* taken over by another node while we held them */
	uint64_t releases;       /* retired/released by this process */
	/* The root's census (issue 50), from this node's first claim on and at
	 * a renewal round at most once a minute: the census the root's nodes
	 * share at ROOT/census (one read while it is fresh; about one node of
	 * the root counts it per period: a list of the worker records, a read of
	 * each, one list of the live identities), or the one this node's claim
	 * counted on the way. */
	bool census_valid;           /* a census was taken */
	uint32_t total_ids;          /* the root's claimable worker IDs (2^worker_bits, less
				      * those it reserves for static nodes) */
	uint32_t free_ids;           /* claimable now: never claimed, released or expired */
	uint32_t stranded_ids;       /* leased to an owner with no live session, lease running */
	uint64_t next_stranded_unix; /* unix ms the first stranded lease ends (0: none) */
	uint64_t census_unix;        /* unix ms the census was taken (by its taker's clock) */
	uint64_t censuses;           /* censuses this node counted itself (not read) */
};

struct fw_fleet;

/*
 * Creates a registry for @n_slots worker IDs (1..FW_FLEET_SLOTS_MAX). Checks
 * the config; connects to nothing.
 * Returns 0 with *out set; -EINVAL with a line in @err (connect empty, root
 * not absolute, identity with other characters, lease_ms < 2 * renew_ms,
 * n_slots out of range, bad etcd options); -ENOTSUP with a line in @err
 * (this build has no library for the store cfg names); -ENOMEM. The store
 * is fw_fleet_store_open's (etcd when cfg->etcd is set, else ZooKeeper).
 */
FW_API int fw_fleet_create(const struct fw_fleet_config *cfg, uint32_t n_slots,
			   struct fw_fleet **out, char *err, size_t errlen);

/*
 * Claims a worker ID for every slot and starts the registry thread. Order:
 * IDs this process proves it held (its cache, written under the same
 * state_stamp, holds the record's token: a restart keeps its IDs), then released
 * ones whose floor is below the store's time (lowest worker ID first), then
 * never-claimed ones (created atomically), then released ones with a floor
 * ahead, then expired ones (lease_until before ZooKeeper's time, read
 * from a znode's mtime): taken over with floor = old lease_until. A live
 * record with this identity that the cache does not prove is another
 * owner's (a twin behind a partition, a clone): when only such records
 * stand between a slot and a worker ID, the slot starts without one
 * (NO_LEASE, one WARN naming them and their lease ends) and the thread
 * claims one at a later round, once a lease ends or an ID is freed.
 * This identity's liveness record (ROOT/nodes/IDENTITY) held by another
 * session is replaced at once when it names this state's stamp and another
 * process (this state's previous process, killed: its session not yet
 * ended); any other (a twin of this identity on another state, a record
 * written before issue 49) is waited for up to a session timeout plus 2 s,
 * then FW_EFLEET_IDENTITY.
 * Waits up to cfg.start_wait_ms for ZooKeeper. When it does not answer in
 * time: the slots come from the cache file (its confirmed leases; *from_cache
 * true) or, with no usable cache, stay without a worker (NO_LEASE) while the
 * thread keeps trying; both return 0 and log why once.
 * Returns 0; -EWOULDBLOCK (another process holds the cache file's lock:
 * @err names it, the holder's PID and [fleet] cache_file);
 * FW_EFLEET_FULL (not enough worker IDs: @err names how many are
 * owned, by whom and when each lease ends, how many are free and stranded;
 * with cfg.start_when_full the start returns 0 instead, holding none, and
 * logs the same line); FW_EFLEET_LAYOUT (the root holds
 * another layout); FW_EFLEET_ROOT (no root at cfg.root, or one that serves
 * another datacenter value or was made before `flakectl fleet init`
 * recorded one: a node never creates a root); FW_EFLEET_IDENTITY (another live process holds this
 * identity); FW_EFLEET_STORE (a store error other than unreachable: @err names the store);
 * -errno. On error nothing is published and the IDs this call newly claimed
 * (new, free, taken over) are released again with their own floor; IDs it
 * took back stay owned by this identity (its previous run may have issued
 * up to their old lease, which their floor does not cover), so the next
 * start takes them back. A write whose reply was lost stays as written and
 * is taken back the same way.
 */
FW_API int fw_fleet_start(struct fw_fleet *f, bool *from_cache, char *err, size_t errlen);

/*
 * Copies slot @i's current state into *out. Returns 0 or -EINVAL.
 */
FW_API int fw_fleet_slot(struct fw_fleet *f, uint32_t i, struct fw_fleet_slot *out);

/*
 * Asks for a fresh worker ID for slot @i ([clock] backstep = new_worker):
 * the thread claims one (not the current one) and publishes it with a new
 * gen; the old one stays owned until fw_fleet_retire(). Returns 0 or -EINVAL.
 */
FW_API int fw_fleet_replace(struct fw_fleet *f, uint32_t i);

/*
 * fw_fleet_replace for every slot as one decision ([clock] backstep =
 * new_worker): the thread claims a fresh ID for each slot (never one this
 * process holds or is retiring, and only one whose floor is at or below the
 * local clock, so it can issue at once) before publishing any, then
 * publishes all of them together; when not every slot can get one, none is
 * published, what was claimed is given back, and it retries with backoff
 * (logged once) while the current IDs keep issuing. Returns 0 or -EINVAL.
 */
FW_API int fw_fleet_replace_all(struct fw_fleet *f);

/*
 * Records that this process will never issue worker ID @worker again and
 * issued nothing above @last_ms (layout ms): the thread releases it in
 * ZooKeeper with lease_until = floor = max(floor, @last_ms), so it becomes
 * free with its history fenced. Returns 0, -ENOENT (not held or retiring).
 */
FW_API int fw_fleet_retire(struct fw_fleet *f, int32_t worker, uint64_t last_ms);
/* (A retirement is done only when the store confirms the release, or shows
 * another owner above @last_ms; until then the ID stays retiring, retried
 * every round, and this process never claims it again.) */

/* Fills *st. */
FW_API void fw_fleet_status(struct fw_fleet *f, struct fw_fleet_status *st);

/*
 * A graceful stop that gives this process's worker IDs back. Call it only
 * once every worker has stopped and the final mark is persisted in
 * cfg.mark_file (it is read here: everything this process and the runs it
 * took IDs back from issued is at or below it). Stops the thread, then,
 * when the store's session is up: writes the cache without the held IDs
 * (durably: a start from the cache no longer offers them), and releases
 * each (the held slots' and the retiring ones') by compare-and-set with
 * owner "" and lease_until = floor = max(floor, final mark) (layout ms), as
 * fw_fleet_retire does: done only when the store confirms it (or shows
 * another owner above that point). Then as fw_fleet_stop.
 * A release not confirmed by @timeout_ms after the call (the store down,
 * a reply lost, refused) leaves that ID leased to this identity until its
 * lease ends, logged with that time; the cache no longer names it, so no
 * start serves it again (a reply lost after the store applied it would
 * otherwise let a restart from the cache serve an ID another node claimed).
 * When the store is unreachable before anything is sent, nothing changes:
 * the IDs stay leased and in the cache, so the next start on this state
 * takes them back. Bounded by @timeout_ms plus one store call in flight.
 * Returns the number of IDs released (0 when none was held); -ENOTCONN
 * (the store unreachable: nothing sent); -ENOENT and other fw_mark_read
 * codes (no final mark: nothing released); a cache write's -errno (the
 * cache could not drop them: nothing released); FW_EFLEET_STORE (some
 * release not confirmed: those stay leased, the others are released).
 */
FW_API int fw_fleet_stop_release(struct fw_fleet *f, uint32_t timeout_ms);

/*
 * Stops the thread and closes the session (the ephemeral node goes; leases
 * stay, so a restart takes its IDs back; fw_fleet_stop_release gives them
 * back instead). Bounded by one store call in flight plus 500 ms.
 */
FW_API void fw_fleet_stop(struct fw_fleet *f);

/* Stops if needed and frees. NULL is fine. */
FW_API void fw_fleet_free(struct fw_fleet *f);

/* ---- operators (flakectl fleet): one-shot sessions ---- */

struct fw_fleet_entry {
	uint32_t worker;
	char owner[FW_FLEET_IDENTITY_MAX]; /* "" when free */
	uint64_t lease_ms;                 /* layout ms */
	uint64_t floor_ms;                 /* layout ms */
	uint64_t renewed_unix; /* znode mtime: the owner's last write, ZooKeeper's clock */
	bool alive;            /* ROOT/nodes/OWNER exists: a live session */
};

struct fw_fleet_list {
	struct fw_layout layout; /* from the root node */
	uint64_t server_unix;    /* ZooKeeper's time now (mtime of a write) */
	bool time_local;         /* server_unix is this host's clock (no credentials to write) */
	uint32_t n;
	struct fw_fleet_entry *v; /* n entries, by worker ID; free with fw_fleet_list_free */
	/* The root's census at server_unix, counted by the function a node's
	 * flakewire_fleet_{free,stranded}_worker_ids gauges use: */
	uint32_t total_ids;          /* 2^worker_bits less the root's reserved IDs */
	uint32_t reserved_ids;       /* reserved for static nodes: neither free nor counted */
	uint32_t free_ids;           /* never claimed, released, or lease ended */
	uint32_t stranded_ids;       /* leased to an owner with no live session */
	uint32_t garbled_ids;        /* unreadable records: never claimed, never free */
	uint64_t next_stranded_unix; /* unix ms the first stranded lease ends (0: none) */
};

/*
 * Reads every worker znode under @root.
 * Returns 0; -ENOENT (no fleet at @root); FW_EFLEET_STORE (unreachable within
 * @timeout_ms, or an error: @err says which); -ENOMEM.
 */
FW_API int fw_fleet_list_read(const char *connect, const char *root, uint32_t timeout_ms,
			      struct fw_fleet_list *out, char *err, size_t errlen);

FW_API void fw_fleet_list_free(struct fw_fleet_list *l);

/* fw_fleet_release's flags */
#define FW_FLEET_RELEASE_FORCE 0x1u /* release a live owner's ID too */

/*
 * Releases worker ID @worker (a decommissioned node's): owner becomes empty,
 * floor = lease_until = max(floor, lease_until), so its next owner issues
 * only above anything the old one may have issued. An owner with a live
 * session whose lease runs is refused unless FW_FLEET_RELEASE_FORCE (it
 * keeps issuing until its confirmed lease ends: stop it first); forced, its
 * renewal then fails and it stops at its confirmed lease.
 * Returns 0; -ENOENT (no such worker znode); -EBUSY (a live owner, @err names
 * it and its lease end); FW_EFLEET_STORE.
 */
FW_API int fw_fleet_release(const char *connect, const char *root, uint32_t worker, unsigned flags,
			    uint32_t timeout_ms, char *err, size_t errlen);

/*
 * The ZooKeeper digest credentials ("user:password", NULL: none) the
 * operators' tools above use from now on (set once, from the same file as
 * [fleet] zookeeper_auth_file); kept in a private copy, zeroed when replaced.
 */
FW_API void fw_fleet_admin_zk_auth(const char *auth);

/*
 * Migrates a ZooKeeper fleet created with open ACLs: the root, its
 * children and every record get the fleet's ACL (all permissions for the
 * credentials of fw_fleet_admin_zk_auth, read for anyone).
 * Returns the number of znodes secured; -EINVAL (etcd, or no credentials);
 * -ENOENT (no fleet at @root); -EACCES (the fleet belongs to another
 * principal); FW_EFLEET_STORE-style store codes with @err.
 */
FW_API int fw_fleet_secure(const char *connect, const char *root, uint32_t timeout_ms, char *err,
			   size_t errlen);

/* fw_fleet_init's results (>= 0) */
#define FW_FLEET_INIT_CREATED 0 /* a new root */
#define FW_FLEET_INIT_SAME    1 /* the root exists with this layout, value, reservation: unchanged */
#define FW_FLEET_INIT_ADOPTED 2 /* a root made before this version now records its value */

/*
 * Makes the fleet root @root in the store @connect names (as
 * fw_fleet_list_read) for layout @l and datacenter value @datacenter,
 * keeping worker IDs @reserve ("0-3,7"; NULL or "": none) for static nodes
 * (no claim ever takes them). The only way a root comes to exist: nodes
 * never create one. Every root of one store shares one layout and has its
 * own datacenter value (recorded store-wide under FW_FLEET_IDS, created
 * once, so of two concurrent inits of one value only one succeeds).
 * Returns FW_FLEET_INIT_CREATED, _SAME (nothing written) or _ADOPTED (a
 * root made before roots recorded their value: its records are kept;
 * a reserved ID must have none); -EINVAL (@root at or under FW_FLEET_IDS,
 * @datacenter beyond the width, a bad @reserve); FW_EFLEET_LAYOUT (the store's
 * roots or @root use another layout); FW_EFLEET_ROOT (@datacenter is another
 * root's; @root exists with another value or reservation); FW_EFLEET_AUTH;
 * FW_EFLEET_STORE. @err gets one line naming both sides of a conflict.
 */
FW_API int fw_fleet_init(const char *connect, const char *root, const struct fw_layout *l,
			 uint32_t datacenter, const char *reserve, uint32_t timeout_ms, char *err,
			 size_t errlen);

/*
 * A static node (worker IDs from [id], no claims) whose configuration names a
 * store: checks that cfg->root is a root made for cfg->layout and
 * cfg->datacenter (as fw_fleet_start does) and that it reserves each of
 * @workers (@n of them), so no claim of its fleet can take them. Waits up to
 * cfg->start_wait_ms for the store. Reads only.
 * Returns 0; FW_EFLEET_ROOT (no such root, another datacenter value, or a
 * worker ID it does not reserve: @err names it and the reservation);
 * FW_EFLEET_LAYOUT; FW_EFLEET_AUTH; FW_EFLEET_STORE (unreachable: a static node
 * that cannot check does not start); -EINVAL; -ENOTSUP.
 */
FW_API int fw_fleet_static_check(const struct fw_fleet_config *cfg, const uint32_t *workers,
				 uint32_t n, char *err, size_t errlen);

/*
 * Fences @root after its store was wiped or restored from a snapshot: makes
 * the root again if it is gone (as fw_fleet_init, the same terms), then
 * writes into it a fence, the store's time now (or this host's, whichever is
 * later) plus @lease_ms (at least every node's [fleet] lease_ms), and a new
 * generation. No claim's floor is ever below the fence: every ID any owner
 * may have issued under a lease confirmed before it is below. Nodes stopped
 * by the wipe or restore (a missing root, another generation, a record of
 * theirs gone back) accept the newer fence and continue: live owners re-prove
 * their own records by their token. *fence_unix (may be NULL) gets the fence
 * in unix ms. Returns 0 or fw_fleet_init's error codes.
 */
FW_API int fw_fleet_fence(const char *connect, const char *root, const struct fw_layout *l,
			  uint32_t datacenter, const char *reserve, uint64_t lease_ms,
			  uint32_t timeout_ms, uint64_t *fence_unix, char *err, size_t errlen);
