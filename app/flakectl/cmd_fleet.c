/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flakectl.h"
#include "fw_err.h"
#include "fw_fleet.h"
#include "fw_layout.h"
#include "fw_secret.h"

#define FLEET_EXIT_PROBLEM 1 /* check: something needs an operator */
#define FLEET_EXIT_UNKNOWN 3 /* check: the registry could not be read */

static void fleet_help(FILE *f)
{
	fprintf(f,
		"usage: flakectl fleet ls      (--zk HOSTS | --etcd URLS) --root PATH [--timeout "
		"MS]\n"
		"       flakectl fleet release WORKER (--zk HOSTS | --etcd URLS) --root PATH\n"
		"                      [--force] [--timeout MS]\n"
		"       flakectl fleet check   (--zk HOSTS | --etcd URLS) --root PATH [--warn-ms "
		"MS]\n"
		"                      [--timeout MS]\n"
		"       flakectl fleet secure  --zk HOSTS --root PATH --auth-file FILE\n"
		"\n"
		"The worker-ID registry of a fleet, in ZooKeeper ([fleet] zookeeper and root) or\n"
		"etcd ([fleet] etcd and root).\n"
		"\n"
		"  ls        every worker ID: owner, lease_until, floor, the owner's last\n"
		"            renewal (ZooKeeper's time; etcd keeps none: -), whether its session\n"
		"            is alive\n"
		"  release   a decommissioned node's worker ID becomes free; its floor rises to\n"
		"            its lease_until, so its next owner issues only above anything the\n"
		"            old one may have issued (records are never deleted); refused\n"
		"            while its owner is alive (it keeps issuing until its lease ends:\n"
		"            stop it first) unless --force\n"
		"  check     exit 0 when every owned lease is healthy, 1 when one needs an\n"
		"            operator (printed: a lease ending within --warn-ms or ended while\n"
		"            its owner is alive, i.e. renewals fail; an owner whose session is\n"
		"            gone while its lease runs), 3 when the registry cannot be read\n"
		"            (ls too: 3 when the registry cannot be read, 1 when no fleet\n"
		"            is at --root; with the registry down, each node's own leases\n"
		"            are on its /metrics: flakectl status --metrics HOST:PORT)\n"
		"  secure    ZooKeeper: gives a fleet created with open ACLs the fleet's ACL\n"
		"            (all permissions for --auth-file's principal, read for anyone)\n"
		"\n"
		"  --zk HOSTS       ZooKeeper connect string, host:port[,host:port...]\n"
		"  --etcd URLS      etcd endpoints, http[s]://host:port[,...]; TLS and user from\n"
		"                   FW_ETCD_CA_FILE, FW_ETCD_CERT_FILE, FW_ETCD_KEY_FILE,\n"
		"                   FW_ETCD_USER and FW_ETCD_PASSWORD in the environment (a\n"
		"                   password over http:// only with FW_ETCD_PLAIN_PASSWORD=yes)\n"
		"  --root PATH      the fleet's root ([fleet] root): a znode in ZooKeeper, a key\n"
		"                   prefix in etcd, e.g. /flakewire/dc1\n"
		"  --auth-file FILE ZooKeeper digest credentials USER:PASSWORD ([fleet]\n"
		"                   zookeeper_auth_file: the same file, the same checks)\n"
		"  --warn-ms MS     check: warn when a live owner's lease ends within MS\n"
		"                   (default 3600000, 1 h)\n"
		"  --force          release: even a live owner's ID\n"
		"  --timeout MS     wait this long for the registry (default 5000)\n");
}

static const char *iso(const struct fw_fleet_list *l, uint64_t layout_ms, char *buf)
{
	return fw_format_iso8601(layout_ms + l->layout.epoch_ms, buf);
}

static int fleet_ls(const struct fw_fleet_list *l)
{
	char a[FW_ISO8601_LEN], b[FW_ISO8601_LEN], c[FW_ISO8601_LEN];
	uint32_t owned = 0, stranded = 0;
	uint64_t next = UINT64_MAX;
	printf("%-6s %-24s %-24s %10s %-24s %-24s %-7s %s\n", "WORKER", "OWNER", "LEASE_UNTIL",
	       "LEFT_S", "FLOOR", "RENEWED", "SESSION", "STATE");
	for (uint32_t i = 0; i < l->n; i++) {
		const struct fw_fleet_entry *e = &l->v[i];
		int64_t left =
			(int64_t)(e->lease_ms + l->layout.epoch_ms) - (int64_t)l->server_unix;
		const char *state = !e->owner[0] ? "free" : left < 0 ? "expired" : "owned";
		owned += e->owner[0] && left >= 0;
		if (e->owner[0] && left >= 0 && !e->alive) {
			stranded++;
			next = e->lease_ms < next ? e->lease_ms : next;
		}
		printf("%-6u %-24s %-24s %10.1f %-24s %-24s %-7s %s\n", e->worker,
		       e->owner[0] ? e->owner : "-", iso(l, e->lease_ms, a), (double)left / 1000.0,
		       iso(l, e->floor_ms, b),
		       e->renewed_unix ? fw_format_iso8601(e->renewed_unix, c) : "-",
		       e->alive ? "alive" : "-", state);
	}
	uint32_t total = 1u << l->layout.worker_bits;
	printf("%u of %u worker IDs owned, %u never claimed; %s %s\n", owned, total, total - l->n,
	       l->time_local ? "this host's time (the registry's needs --auth-file)"
			     : "registry time",
	       fw_format_iso8601(l->server_unix, a));
	/* the same census as the nodes' flakewire_fleet_{free,stranded}_worker_ids */
	printf("free: %u (never claimed, released or expired); stranded: %u (leased, no live "
	       "session)%s%s\n",
	       total - owned, stranded, stranded ? ", the next back at " : "",
	       stranded ? iso(l, next, b) : "");
	return FC_EXIT_OK;
}

static int fleet_check(const struct fw_fleet_list *l, uint64_t warn_ms)
{
	char a[FW_ISO8601_LEN];
	uint32_t problems = 0, owned = 0;
	for (uint32_t i = 0; i < l->n; i++) {
		const struct fw_fleet_entry *e = &l->v[i];
		int64_t fl = (int64_t)(e->floor_ms + l->layout.epoch_ms) - (int64_t)l->server_unix;
		if (!e->owner[0] && fl > 0) {
			/* released (or retired) while its owner's lease ran: that owner may
			 * still issue under it until the floor (its confirmed lease) */
			printf("PROBLEM worker %u: free, but its floor is %.1f s ahead (%s): a "
			       "release while its owner's lease ran (that owner may still issue "
			       "under it until then), or a retirement above the clock; nobody "
			       "can claim it to issue before\n",
			       e->worker, (double)fl / 1000.0, iso(l, e->floor_ms, a));
			problems++;
			continue;
		}
		if (!e->owner[0])
			continue;
		int64_t left =
			(int64_t)(e->lease_ms + l->layout.epoch_ms) - (int64_t)l->server_unix;
		if (left >= 0)
			owned++;
		if (e->alive && left < 0) {
			printf("PROBLEM worker %u: %s is alive but its lease ended at %s: its "
			       "renewals fail, it answers NO_LEASE\n",
			       e->worker, e->owner, iso(l, e->lease_ms, a));
			problems++;
		} else if (e->alive && left < (int64_t)warn_ms) {
			printf("PROBLEM worker %u: %s's lease ends in %.1f s (%s): renewals are "
			       "not getting through\n",
			       e->worker, e->owner, (double)left / 1000.0, iso(l, e->lease_ms, a));
			problems++;
		} else if (!e->alive && left >= 0) {
			printf("PROBLEM worker %u: owner %s has no live session; its lease runs "
			       "until %s (restart it, or 'flakectl fleet release %u' if it is gone "
			       "for good)\n",
			       e->worker, e->owner, iso(l, e->lease_ms, a), e->worker);
			problems++;
		}
	}
	printf("%s: %u of %u worker IDs owned, %u problem(s)\n", problems ? "PROBLEM" : "OK", owned,
	       1u << l->layout.worker_bits, problems);
	return problems ? FLEET_EXIT_PROBLEM : FC_EXIT_OK;
}

/* lib/fleet's lines start with "fleet: ", as does fc_err's: say it once */
static const char *msg(const char *err)
{
	return strncmp(err, "fleet: ", 7) ? err : err + 7;
}

int cmd_fleet(int argc, char **argv)
{
	const char *cmd = "fleet", *zk = NULL, *etcd = NULL, *root = NULL, *sub = NULL,
		   *workers = NULL, *auth_file = NULL;
	uint64_t timeout = 5000, warn = 3600000, worker = 0;
	bool force = false;
	char err[4096];

	for (int i = 1; i < argc; i++) {
		int r;
		if (fc_is_help(argv[i])) {
			fleet_help(stdout);
			return FC_EXIT_OK;
		}
		if ((r = fc_opt_value(argc, argv, &i, "--zk", &zk)) != 0 ||
		    (r = fc_opt_value(argc, argv, &i, "--etcd", &etcd)) != 0 ||
		    (r = fc_opt_value(argc, argv, &i, "--root", &root)) != 0 ||
		    (r = fc_opt_value(argc, argv, &i, "--auth-file", &auth_file)) != 0 ||
		    (r = fc_opt_u64(argc, argv, &i, "--timeout", 100, 600000, &timeout)) != 0 ||
		    (r = fc_opt_u64(argc, argv, &i, "--warn-ms", 0, UINT64_C(1) << 40, &warn)) !=
			    0) {
			if (r < 0)
				return FC_EXIT_USAGE;
			continue;
		}
		if (!strcmp(argv[i], "--force")) {
			force = true;
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1])
			return fc_unknown_arg(cmd, argv[i]);
		if (sub == NULL)
			sub = argv[i];
		else if (!strcmp(sub, "release") && workers == NULL)
			workers = argv[i];
		else
			return fc_unknown_arg(cmd, argv[i]);
	}
	if (sub == NULL || (strcmp(sub, "ls") && strcmp(sub, "release") && strcmp(sub, "check") &&
			    strcmp(sub, "secure"))) {
		fc_err(cmd, "%s%s: expected ls, release, check or secure", sub ? sub : "subcommand",
		       sub ? "" : " missing");
		return FC_EXIT_USAGE;
	}
	if ((zk == NULL || !*zk) == (etcd == NULL || !*etcd)) {
		fc_err(cmd, "--zk or --etcd: give one (ZooKeeper connect string, [fleet] "
			    "zookeeper; or etcd endpoints, [fleet] etcd)");
		return FC_EXIT_USAGE;
	}
	if (etcd != NULL && *etcd && strncmp(etcd, "http://", 7) && strncmp(etcd, "https://", 8)) {
		fc_err(cmd, "--etcd %s: not http://HOST:PORT or https://HOST:PORT", etcd);
		return FC_EXIT_USAGE;
	}
	if (zk == NULL || !*zk)
		zk = etcd; /* lib/fleet's tools tell the store by the URL scheme */
	if (root == NULL || root[0] != '/') {
		fc_err(cmd, "--root %s: missing or not an absolute path ([fleet] root)",
		       root ? root : "");
		return FC_EXIT_USAGE;
	}
	if (auth_file != NULL) {
		char auth[512];
		int arc = fw_secret_read(auth_file, "--auth-file", auth, sizeof(auth), err,
					 sizeof(err));
		if (arc == 0 && strchr(auth, ':') == NULL) {
			snprintf(err, sizeof(err),
				 "--auth-file = %s: not USER:PASSWORD on its first line",
				 auth_file);
			arc = -EINVAL;
		}
		if (arc != 0) {
			explicit_bzero(auth, sizeof(auth));
			fc_err(cmd, "%s", err);
			return FC_EXIT_USAGE;
		}
		fw_fleet_admin_zk_auth(auth);
		explicit_bzero(auth, sizeof(auth));
	}
	if (!strcmp(sub, "secure")) {
		if (auth_file == NULL) {
			fc_err(cmd, "secure: --auth-file FILE: the credentials the fleet will "
				    "belong to");
			return FC_EXIT_USAGE;
		}
		int n = fw_fleet_secure(zk, root, (uint32_t)timeout, err, sizeof(err));
		if (n < 0) {
			fc_err(cmd, "%s", msg(err));
			return FC_EXIT_FAIL;
		}
		printf("%s: %d znode(s) secured: writable by the credentials of %s only, "
		       "readable by anyone\n",
		       root, n, auth_file);
		return FC_EXIT_OK;
	}
	if (!strcmp(sub, "release")) {
		if (workers == NULL || fc_parse_u64(workers, &worker) != FC_NUM_OK ||
		    worker > 65535) {
			fc_err(cmd, "release %s: WORKER must be a worker ID (0-65535)",
			       workers ? workers : "(missing)");
			return FC_EXIT_USAGE;
		}
		int rc = fw_fleet_release(zk, root, (uint32_t)worker,
					  force ? FW_FLEET_RELEASE_FORCE : 0, (uint32_t)timeout,
					  err, sizeof(err));
		if (rc != 0) {
			fc_err(cmd, "%s", msg(err));
			return FC_EXIT_FAIL;
		}
		printf("worker %" PRIu64 " released in %s\n", worker, root);
		return FC_EXIT_OK;
	}
	struct fw_fleet_list l;
	int rc = fw_fleet_list_read(zk, root, (uint32_t)timeout, &l, err, sizeof(err));
	if (rc != 0) {
		fc_err(cmd, "%s", msg(err));
		if (rc == -ENOENT)
			return FC_EXIT_FAIL;
		/* who holds what is only in the registry; each node still knows its own */
		fc_err(cmd, "the registry cannot be read: each node's own leases (seconds left, "
			    "ended) are on its /metrics: flakectl status --metrics HOST:PORT");
		return FLEET_EXIT_UNKNOWN; /* unreadable: 3 */
	}
	rc = !strcmp(sub, "ls") ? fleet_ls(&l) : fleet_check(&l, warn);
	fw_fleet_list_free(&l);
	return rc;
}
