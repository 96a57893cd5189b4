/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flakectl.h"
#include "fw_conf.h"
#include "fw_err.h"
#include "fw_fleet.h"
#include "fw_layout.h"
#include "fw_secret.h"

#define FLEET_EXIT_PROBLEM 1 /* check: something needs an operator */
#define FLEET_EXIT_UNKNOWN 3 /* check: the registry could not be read */

static void fleet_help(FILE *f)
{
	fprintf(f,
		"usage: flakectl fleet init    (--zk HOSTS | --etcd URLS) --root PATH\n"
		"                      [--config FILE] [--set id.KEY=VALUE]... [--reserve LIST]\n"
		"                      [--timeout MS]\n"
		"       flakectl fleet fence   (--zk HOSTS | --etcd URLS) --root PATH [init's "
		"options]\n"
		"                      [--lease-ms MS]\n"
		"       flakectl fleet ls      (--zk HOSTS | --etcd URLS) --root PATH [--timeout "
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
		"  init      makes the fleet's root (nodes never do): records the [id] layout\n"
		"            (from --config FILE and --set id.KEY=VALUE as the responders take\n"
		"            them; the default layout with neither) and its datacenter value\n"
		"            ([id] datacenter). Refused when another root of the store has that\n"
		"            value or the store's roots use another layout; on a root that\n"
		"            exists with the same terms it changes nothing (exit 0); a root\n"
		"            made before roots recorded their value is adopted, its records\n"
		"            kept\n"
		"  fence     after the registry was wiped or restored from a snapshot: makes\n"
		"            the root again if it is gone (as init), then raises the floor of\n"
		"            every later claim to the registry's time now plus --lease-ms, with\n"
		"            a new generation. Until then nodes make no claim, takeover or\n"
		"            renewal (they issue within their confirmed leases); then they go on\n"
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
		"  --config FILE    init: the layout of this responder configuration ([id])\n"
		"  --set id.KEY=VALUE  init: a layout override, as the responders' --set\n"
		"  --reserve LIST   init: worker IDs kept for static nodes ([fleet] static =\n"
		"                   yes), e.g. 0-3,7: no claim ever takes them\n"
		"  --lease-ms MS    fence: at least every node's [fleet] lease_ms (default\n"
		"                   86400000, 24 h)\n"
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
	uint32_t owned = 0;
	printf("%-6s %-24s %-24s %10s %-24s %-24s %-7s %s\n", "WORKER", "OWNER", "LEASE_UNTIL",
	       "LEFT_S", "FLOOR", "RENEWED", "SESSION", "STATE");
	for (uint32_t i = 0; i < l->n; i++) {
		const struct fw_fleet_entry *e = &l->v[i];
		int64_t left =
			(int64_t)(e->lease_ms + l->layout.epoch_ms) - (int64_t)l->server_unix;
		const char *state = !e->owner[0] ? "free" : left < 0 ? "expired" : "owned";
		owned += e->owner[0] && left >= 0;
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
	/* the census the nodes' flakewire_fleet_{free,stranded}_worker_ids count (one function) */
	printf("free: %u (never claimed, released or expired); stranded: %u (leased, no live "
	       "session)%s%s; %u claimable, %u reserved for static nodes, %u garbled\n",
	       l->free_ids, l->stranded_ids, l->stranded_ids ? ", the next back at " : "",
	       l->stranded_ids ? fw_format_iso8601(l->next_stranded_unix, b) : "", l->total_ids,
	       l->reserved_ids, l->garbled_ids);
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

/* flakectl fleet init: the layout as the responders take it, then fw_fleet_init. */
/* flakectl fleet fence (@fence_lease > 0): the same, then the fence. */
static int fleet_init(const char *cmd, const char *connect, const char *root, const char *config,
		      const char *const *sets, int n_sets, const char *reserve, uint32_t timeout,
		      uint64_t fence_lease)
{
	static struct fw_conf c; /* large */
	char err[4096], res[256];
	struct fw_layout l;
	fw_conf_init(&c);
	if (config && fw_conf_load(&c, config, FW_CONF_F_NO_PORTS, err, sizeof(err))) {
		fc_err(cmd, "--config %s", err);
		return FC_EXIT_USAGE;
	}
	for (int i = 0; i < n_sets; i++)
		if (fw_conf_set(&c, sets[i], FW_CONF_F_NO_PORTS, err, sizeof(err))) {
			fc_err(cmd, "--set %s", err);
			return FC_EXIT_USAGE;
		}
	int rc = fw_layout_init(&l, c.id.epoch_ms, c.id.datacenter_bits, c.id.worker_bits,
				c.id.sequence_bits, 0);
	if (rc != 0 || (c.id.datacenter >> c.id.datacenter_bits)) {
		fc_err(cmd, "[id] layout: %s",
		       rc ? fw_strerror(rc) : "datacenter out of range for datacenter_bits");
		return FC_EXIT_USAGE;
	}
	if (fence_lease) {
		uint64_t at = 0;
		char ts[FW_ISO8601_LEN];
		rc = fw_fleet_fence(connect, root, &l, c.id.datacenter, reserve, fence_lease,
				    timeout, &at, err, sizeof(err));
		if (rc < 0) {
			fc_err(cmd, "%s", msg(err));
			return rc == -EINVAL ? FC_EXIT_USAGE : FC_EXIT_FAIL;
		}
		printf("%s: fenced: no claim issues below %s (unix ms %" PRIu64
		       "), new generation\n",
		       root, fw_format_iso8601(at, ts), at);
		return FC_EXIT_OK;
	}
	rc = fw_fleet_init(connect, root, &l, c.id.datacenter, reserve, timeout, err, sizeof(err));
	if (rc < 0) {
		fc_err(cmd, "%s", msg(err));
		return rc == -EINVAL ? FC_EXIT_USAGE : FC_EXIT_FAIL;
	}
	snprintf(res, sizeof(res), "%s", reserve && *reserve ? reserve : "none");
	printf("%s: %s: epoch_ms %" PRIu64 " datacenter_bits %u worker_bits %u "
	       "sequence_bits %u, datacenter %u, reserved %s\n",
	       root,
	       rc == FW_FLEET_INIT_CREATED ? "created"
	       : rc == FW_FLEET_INIT_SAME  ? "exists with these terms, unchanged"
					   : "adopted (its records kept)",
	       l.epoch_ms, l.dc_bits, l.worker_bits, l.seq_bits, c.id.datacenter, res);
	return FC_EXIT_OK;
}

int cmd_fleet(int argc, char **argv)
{
	const char *cmd = "fleet", *zk = NULL, *etcd = NULL, *root = NULL, *sub = NULL,
		   *workers = NULL, *auth_file = NULL;
	uint64_t timeout = 5000, warn = 3600000, worker = 0, lease = 86400000;
	bool force = false;
	char err[4096];
	const char *config = NULL, *reserve = NULL, *sets[32];
	int n_sets = 0;

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
		    (r = fc_opt_value(argc, argv, &i, "--config", &config)) != 0 ||
		    (r = fc_opt_value(argc, argv, &i, "--reserve", &reserve)) != 0 ||
		    (r = fc_opt_u64(argc, argv, &i, "--timeout", 100, 600000, &timeout)) != 0 ||
		    (r = fc_opt_u64(argc, argv, &i, "--lease-ms", 1000, UINT64_C(1) << 40,
				    &lease)) != 0 ||
		    (r = fc_opt_u64(argc, argv, &i, "--warn-ms", 0, UINT64_C(1) << 40, &warn)) !=
			    0) {
			if (r < 0)
				return FC_EXIT_USAGE;
			continue;
		}
		const char *set = NULL;
		if ((r = fc_opt_value(argc, argv, &i, "--set", &set)) != 0) {
			if (r < 0)
				return FC_EXIT_USAGE;
			if (n_sets == (int)FW_ARRAY_SIZE(sets) || strncmp(set, "id.", 3)) {
				fc_err(cmd, "--set %s: only [id] keys (id.KEY=VALUE), at most %zu",
				       set, FW_ARRAY_SIZE(sets));
				return FC_EXIT_USAGE;
			}
			sets[n_sets++] = set;
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
			    strcmp(sub, "secure") && strcmp(sub, "init") && strcmp(sub, "fence"))) {
		fc_err(cmd, "%s%s: expected init, fence, ls, release, check or secure",
		       sub ? sub : "subcommand", sub ? "" : " missing");
		return FC_EXIT_USAGE;
	}
	if (strcmp(sub, "init") && strcmp(sub, "fence") && (config || reserve || n_sets)) {
		fc_err(cmd, "%s: --config, --set and --reserve are for init and fence", sub);
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
	if (!strcmp(sub, "init") || !strcmp(sub, "fence"))
		return fleet_init(cmd, zk, root, config, sets, n_sets, reserve, (uint32_t)timeout,
				  !strcmp(sub, "fence") ? lease : 0);
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
