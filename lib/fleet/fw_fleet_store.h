/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registry interface: what the claiming recipe, the lease rule and
 * their proof (doc/design/fleet-safety.md) need from a store, and nothing
 * more. Two implementations, each its own optional library (lib/fleet/
 * meson.build): ZooKeeper (store_zk.c) and etcd (store_etcd.c), which maps
 * each operation onto etcd's primitives as noted below;
 * fw_fleet_store_open() makes the one a configuration names. Tests use an
 * in-memory one that can lose replies, fail writes, move its time back and
 * drop sessions (tests/unit/fleet_memstore.c).
 *
 * A store holds, under one fleet root:
 *   the root record     the text of fw_fleet_root_format() at ROOT itself:
 *                       layout, datacenter value, reservation, generation;
 *                       written by `flakectl fleet init` only, never by a node
 *   worker records      one per worker ID ever claimed, never deleted, the text
 *                       of fw_fleet_rec_format(), each with a version that
 *                       changes at every write (ZooKeeper: the znode's
 *                       version; etcd: the key's mod_revision)
 *   liveness records    one per live identity, gone when its session ends
 *                       (ZooKeeper: an ephemeral znode; etcd: a key attached
 *                       to a lease the session keeps alive)
 *   the stop record     ROOT/stopped, written by a node that saw the store go
 *                       back (fw_fleet_stop.h), read and written with meta_*
 *   the census record  ROOT/census: the root's last census, shared by its
 *                       nodes so that about one of them counts it per
 *                       period (census.c); gauges only, never a proof
 * and, beside every root, the store-wide records (FW_FLEET_IDS: the layout
 * all roots share, one record per datacenter value in use), read and written
 * with the meta_* operations by absolute key, as the census record is.
 *
 * The rules every implementation keeps (the proof rests on them):
 *  S1 create() succeeds only when the record does not exist (ZooKeeper:
 *     create; etcd: txn comparing create_revision == 0);
 *  S2 cas() succeeds only when the record's version is still @version, and
 *     then changes the version (ZooKeeper: set with version; etcd: txn
 *     comparing mod_revision);
 *  S3 a write that returns 0 is durable and seen by every later get();
 *  S4 a write that returns -ENOTCONN may or may not have happened: the
 *     recipe recognises its own writes afterwards by their token. A store
 *     may send a write again when a try's reply does not come in time
 *     (etcd: etcd_call); its -EEXIST or -ESTALE may then answer its own
 *     write that landed at the first try: the recipe reads the record after
 *     either and recognises its token the same way (a claim, a renewal, a
 *     release), so such a write never leaves an ID leased to nobody.
 * Time: now() is the store's own notion of "now" in unix ms, used only to
 * decide that a lease has expired. Uniqueness never depends on it (a
 * takeover is fenced by the floor and the CAS, not by the clock); a wrong
 * now() can only make a takeover early (the old owner then stops at its
 * confirmed lease, which the new floor is above) or late (availability).
 *
 * Every operation returns 0 or one of:
 *   -ENOENT   no such record
 *   -EEXIST   create(): the record exists; alive_claim(): another live
 *             session holds the identity
 *   -ESTALE   cas(): the version moved (another write came first)
 *   -ENOTCONN the store did not answer (session down, timeout): for a write,
 *             its outcome is unknown
 *   -EIO      another error (last_error() says which)
 *
 * Threads: one store is used by one thread at a time (the registry thread,
 * or fw_fleet_start before it runs); the implementation may run its own
 * threads inside. Functions never print.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw_common.h"

/* Longest record text (layout or worker), without a terminating NUL. */
#define FW_FLEET_REC_MAX 512

/* Session states (state()). */
enum fw_fleet_session_state {
	FW_FLEET_SESSION_UP = 0,   /* connected, liveness record (if claimed) held */
	FW_FLEET_SESSION_DOWN = 1, /* reconnecting within the session: calls fail -ENOTCONN */
	FW_FLEET_SESSION_LOST = 2, /* ended (expired, never opened, closed): connect() again;
				    * the liveness record is gone */
};

/* What a read or a write learns about a record. */
struct fw_fleet_ver {
	int64_t version; /* the value cas() compares */
	uint64_t mtime;  /* unix ms of the record's last write by the store's clock, 0:
			  * the store has none (etcd) */
};

struct fw_fleet_store;

struct fw_fleet_store_ops {
	/*
	 * Opens a session (a no-op when one is up) and waits up to @wait_ms
	 * for it. A session that is DOWN is waited for, not replaced. The
	 * registry calls it at the start of every round (at least every
	 * renew_ms, more often while failing): a store whose liveness must be
	 * refreshed (etcd: the lease's keepalive) may do it here. Returns 0 or
	 * -ENOTCONN.
	 */
	int (*connect)(struct fw_fleet_store *s, uint32_t wait_ms);
	/* Session state now (enum fw_fleet_session_state). */
	int (*state)(struct fw_fleet_store *s);
	/* Ends the session (its liveness record goes). */
	void (*close)(struct fw_fleet_store *s);
	/*
	 * Reads the record at @key, an absolute key (the fleet's root, or a
	 * store-wide record under FW_FLEET_IDS), into @buf (FW_FLEET_REC_MAX
	 * bytes), its length into *len (0: a ZooKeeper node without data) and
	 * its version into *v. -ENOENT: no such record.
	 */
	int (*meta_get)(struct fw_fleet_store *s, const char *key, char *buf, int *len,
			struct fw_fleet_ver *v);
	/*
	 * S1 at @key: creates it holding @buf (@len bytes) only when it does not
	 * exist (-EEXIST). ZooKeeper: missing parents are made empty with open
	 * ACLs (other roots may sit beside), the record itself with the fleet's;
	 * never the store's root for a key below it (a node never makes its
	 * root): -ENOENT when the root is gone. etcd: a key below the root lands
	 * only while the root is the one meta_get read (as worker writes).
	 */
	int (*meta_create)(struct fw_fleet_store *s, const char *key, const char *buf, int len);
	/* S2 at @key: writes @buf when its version is still @version (-ESTALE, -ENOENT). */
	int (*meta_cas)(struct fw_fleet_store *s, const char *key, const char *buf, int len,
			int64_t version);
	/* Sets exists[w] = true for every worker record (w < @total). */
	int (*list)(struct fw_fleet_store *s, bool *exists, uint32_t total);
	/* Reads worker @w's record into @buf (FW_FLEET_REC_MAX bytes) and *v. */
	int (*get)(struct fw_fleet_store *s, uint32_t w, char *buf, int *len,
		   struct fw_fleet_ver *v);
	/* S1: creates worker @w's record; *v gets its version. */
	int (*create)(struct fw_fleet_store *s, uint32_t w, const char *buf, int len,
		      struct fw_fleet_ver *v);
	/* S2: writes worker @w's record if its version is @version; *v: the new one. */
	int (*cas)(struct fw_fleet_store *s, uint32_t w, const char *buf, int len, int64_t version,
		   struct fw_fleet_ver *v);
	/*
	 * The store's time now (unix ms). ZooKeeper writes a clock record and
	 * returns its mtime; *local_mid (may be NULL) gets @local's reading
	 * halfway through (for the offset check; 0 when the store has no clock).
	 * -ESTALE: the store's write counter (ZooKeeper: the clock record's
	 * mzxid; etcd: the reply's revision) is below one this store object saw
	 * before: the store went back (restored from a snapshot).
	 */
	int (*now)(struct fw_fleet_store *s, uint64_t (*local)(void *), void *arg, uint64_t *server,
		   uint64_t *local_mid);
	/*
	 * Creates this session's liveness record for @identity with @data. 0
	 * also when this session already holds it; -EEXIST: another live
	 * session does.
	 */
	int (*alive_claim)(struct fw_fleet_store *s, const char *identity, const char *data,
			   int len);
	/*
	 * Replaces @identity's liveness record, read at @version (meta_get of
	 * fw_fleet_key_node's key), with this session's, holding @data, in one
	 * write that succeeds only while the record is still at @version
	 * (ZooKeeper: a multi of the delete at that version and the ephemeral
	 * create; etcd: txn comparing mod_revision, then put with this
	 * session's lease, which detaches the key from the old one). Only for a
	 * record its caller proved its own identity's dead run's (session.c):
	 * never another live session's. Returns 0; -ESTALE (the record moved or
	 * went: read it again); -ENOTCONN; -EACCES; -EIO.
	 */
	int (*alive_replace)(struct fw_fleet_store *s, const char *identity, int64_t version,
			     const char *data, int len);
	/* *alive = a live session holds @identity's liveness record. */
	int (*alive_of)(struct fw_fleet_store *s, const char *identity, bool *alive);
	/*
	 * Every identity a live session holds the liveness record of, in one
	 * request (ZooKeeper: the children of ROOT/nodes, ephemeral nodes that
	 * exist only while their session lives; etcd: a keys-only range over the
	 * ROOT/nodes/ prefix, keys bound to a live lease): calls @each(@arg,
	 * identity) for each, in no order, and stops at the first non-zero
	 * return, which it returns. What alive_of() would answer for all of
	 * them, as of one moment. Returns 0, @each's code, or a store code.
	 */
	int (*alive_list)(struct fw_fleet_store *s, int (*each)(void *arg, const char *identity),
			  void *arg);
	/* The last error in the store's own words (never NULL). */
	const char *(*last_error)(struct fw_fleet_store *s);
	/* Closes and frees. */
	void (*free)(struct fw_fleet_store *s);
	/*
	 * Optional (NULL: the store keeps no such number; ZooKeeper, whose
	 * restored data directory is its whole state). *mark gets the store's
	 * history mark: a number that never decreases over the life of a store
	 * that was never restored, and that a restore from a copy sets below
	 * what it was when the copy was taken, so below any value read before
	 * (until the restored store has served about as many operations again
	 * as it held revisions). etcd: its raft log's applied index minus its
	 * revision (each revision is one entry of the log, and entries that
	 * write nothing add to the log alone; `etcdctl snapshot restore` starts
	 * a new log at one entry per member with the revision kept). Read in one
	 * reply, revision first: a mark is never below the store's at the moment
	 * of the read, and above it by the entries applied in between.
	 * `flakectl fleet init` and `fence` record it in the root; a mark below
	 * the recorded one by more than FW_FLEET_HISTORY_SLACK (fw_fleet_stop.h)
	 * is a restore since. Returns 0, or a store code.
	 */
	int (*history)(struct fw_fleet_store *s, int64_t *mark);
};

/* Implementations embed this first and fill ops. */
struct fw_fleet_store {
	const struct fw_fleet_store_ops *ops;
	const char *name; /* "ZooKeeper", for messages */
	/* the highest write counter now() saw (0: none): now() answers -ESTALE
	 * below it; the registry sets it to 0 when it accepts a fence */
	int64_t wc_high;
	/* how many sessions this client has opened: the store adds one at each
	 * new session, also one that connect() opens in place of a handle it
	 * gave up on (ZooKeeper: down two session timeouts), which the state
	 * never shows LOST; the session layer makes its liveness record again
	 * whenever it moves */
	uint64_t sessions;
};

/* The codes above by name ("version moved", "store unreachable", ...). */
FW_API const char *fw_fleet_store_strerror(int rc);

/* ---- making a store ---- */

/* Most endpoints in one list. */
#define FW_FLEET_ETCD_ENDPOINTS_MAX 8

/* Connection options; NULL or "" for each string means "not used". */
struct fw_fleet_etcd_opts {
	const char *endpoints; /* "http://h:2379,https://h2:2379": required */
	const char *ca_file;   /* CA bundle for https endpoints (else the system's) */
	const char *cert_file; /* client certificate (PEM), with key_file */
	const char *key_file;  /* client key (PEM) */
	const char *user;      /* etcd user (with password) */
	const char *password;
	/* a password over http:// endpoints crosses the network in clear: refused
	 * unless this is true (the operator's explicit choice) */
	bool plain_password;
	const char *proxy; /* HTTP(S) proxy URL; NULL or "": none, whatever the environment says */
	uint32_t session_ms; /* lease TTL (rounded up to whole seconds, at least 2 s) */
	uint32_t request_ms; /* one HTTP request's timeout; 0: 2000 */
};

/* Which store, and how to reach it (fw_fleet_store_open). */
struct fw_fleet_store_conf {
	/* non-NULL: etcd with these options (zookeeper and zk_auth are not looked at) */
	const struct fw_fleet_etcd_opts *etcd;
	const char *zookeeper; /* else ZooKeeper: its connect string "host:port,host:port" */
	/* ZooKeeper digest credentials "user:password" (NULL or "": none, open ACLs);
	 * copied by the store and zeroed when it is freed */
	const char *zk_auth;
	const char *root;    /* the fleet's root, "/flakewire/dc1" (below 200 characters) */
	uint32_t session_ms; /* ZooKeeper's session timeout (etcd's TTL: etcd->session_ms) */
};

/*
 * Makes the store @c names (etcd when c->etcd is set, else ZooKeeper),
 * connecting to nothing (its connect() does). Each store is an optional
 * library: a build without it refuses here.
 * Returns 0 with *out set (free it with (*out)->ops->free); -EINVAL with a
 * line in @err (an empty or too long connect string, bad etcd options: the
 * line never holds a password; a root too long); -ENOTSUP with a line in
 * @err naming the package this build lacked; -ENOMEM.
 */
FW_API int fw_fleet_store_open(const struct fw_fleet_store_conf *c, struct fw_fleet_store **out,
			       char *err, size_t errlen);
