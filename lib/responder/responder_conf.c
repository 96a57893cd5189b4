/* SPDX-License-Identifier: BSD-3-Clause */
/* The configuration as the components take it (the contract is in fw_responder_conf.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fw_responder_conf.h"
#include "fw_secret.h"

FW_API void fw_responder_keeper_config(struct fw_keeper_config *kc, const struct fw_conf *c,
				       uint64_t epoch_ms)
{
	fw_keeper_config_default(kc);
	kc->clock.max_slew_ppm = c->clock.max_slew_ppm;
	kc->clock.horizon_ms = c->clock.reanchor_ms;
	kc->clock.step_ns = (uint64_t)c->clock.step_ms * 1000000u;
	kc->reanchor_ms = c->clock.reanchor_ms;
	kc->mark_ahead_ms = c->state.mark_ahead_ms;
	kc->start_policy = c->state.start_policy == FW_CONF_START_FAIL ? FW_KEEPER_START_FAIL
								       : FW_KEEPER_START_WAIT;
	kc->state_file = c->state.file;
	kc->epoch_ms = epoch_ms;
	kc->layout = (struct fw_mark_layout){.epoch_ms = epoch_ms,
					     .datacenter_bits = c->id.datacenter_bits,
					     .worker_bits = c->id.worker_bits,
					     .sequence_bits = c->id.sequence_bits,
					     .datacenter = c->id.datacenter};
}

FW_API int fw_responder_driver_config(struct fw_keeper_driver_config *dc, const struct fw_conf *c,
				      uint64_t epoch_ms, uint32_t n_workers, const uint32_t *ids,
				      const char *name, char *err, size_t errlen)
{
	memset(dc, 0, sizeof(*dc));
	if (n_workers == 0 || n_workers > FW_KEEPER_WORKERS_MAX) {
		snprintf(err, errlen, "%u workers: 1 to %u", n_workers, FW_KEEPER_WORKERS_MAX);
		return -EINVAL;
	}
	fw_responder_keeper_config(&dc->keeper, c, epoch_ms);
	dc->keeper.n_workers = n_workers;
	dc->keeper.worker_ids = ids;
	dc->keeper.name = name;
	dc->calibrate_ms = c->clock.calibrate_ms;
	dc->stats_ms = c->stats.interval_s * 1000u;
	return 0;
}

FW_API int fw_responder_state_lock(const struct fw_conf *c, uint32_t n_workers,
				   struct fw_state_lock **out, char *err, size_t errlen)
{
	uint32_t ids[FW_KEEPER_WORKERS_MAX];
	int rc = fw_state_lock_take(c->state.file, out, err, errlen);
	if (rc != 0 || fw_conf_fleet_on(c))
		return rc;
	if (n_workers > FW_KEEPER_WORKERS_MAX)
		n_workers = FW_KEEPER_WORKERS_MAX;
	/* the node field as the ID space sees it: IDs collide on it, not on the worker alone */
	for (uint32_t i = 0; i < n_workers; i++)
		ids[i] = c->id.datacenter << c->id.worker_bits | (uint32_t)fw_conf_worker(c, i);
	if (c->state.lock_dir_mount) {
		/* in a container: a lock in the container's own file system holds for
		 * nobody else; only a host directory mounted in every one does */
		int m = fw_state_lock_dir_mounted(c->state.lock_dir, NULL);
		if (m != 1) {
			snprintf(
				err, errlen,
				"[state] lock_dir = %s is %s, and [state] lock_dir_mount = yes "
				"(set "
				"by the container image): static worker IDs (no [fleet]) need a "
				"host directory mounted there, the same one in every container on "
				"the host (e.g. a hostPath volume of /run/lock/flakewire), so that "
				"two containers cannot both serve worker ID %u; or use a fleet "
				"([fleet] zookeeper or etcd)",
				c->state.lock_dir,
				m == 0         ? "not a mount point of its own"
				: m == -ENOENT ? "missing"
					       : "unreadable",
				(uint32_t)fw_conf_worker(c, 0));
			rc = m == 0 ? -EPERM : m;
		}
	}
	if (rc == 0)
		rc = fw_state_lock_workers(*out, c->state.lock_dir, ids, n_workers,
					   c->id.worker_bits, c->id.sequence_bits, err, errlen);
	if (rc != 0) {
		fw_state_lock_free(*out);
		*out = NULL;
	}
	return rc;
}

/* One list's length against what lib/policy holds; false with @err when too long. */
static bool fits(const char *key, uint32_t n, const char *what, uint32_t max, char *err,
		 size_t errlen)
{
	if (n <= max)
		return true;
	snprintf(err, errlen, "[net] %s = %u %s: at most %u", key, n, what, max);
	return false;
}

FW_API int fw_responder_policy(struct fw_policy *p, const struct fw_conf *c, uint32_t *outside,
			       uint32_t *outside6, char *err, size_t errlen)
{
	const struct fw_conf_cidrs *a = &c->net.allow, *t = &c->net.trusted;
	struct fw_policy_prefix v4[FW_POLICY_PREFIXES_MAX], tv4[FW_POLICY_PREFIXES_MAX];
	struct fw_policy_prefix6 v6[FW_POLICY_PREFIXES_MAX], tv6[FW_POLICY_PREFIXES_MAX];
	uint16_t ports[FW_CONF_LIST_MAX];
	uint32_t o = 0, o6 = 0;

	if (!fits("allow", a->n, "IPv4 prefixes", FW_POLICY_PREFIXES_MAX, err, errlen) ||
	    !fits("allow", a->n6, "IPv6 prefixes", FW_POLICY_PREFIXES_MAX, err, errlen) ||
	    !fits("trusted", t->n, "IPv4 prefixes", FW_POLICY_PREFIXES_MAX, err, errlen) ||
	    !fits("trusted", t->n6, "IPv6 prefixes", FW_POLICY_PREFIXES_MAX, err, errlen) ||
	    !fits("reflector_ports", c->net.reflector_ports.n, "ports", FW_CONF_LIST_MAX, err,
		  errlen))
		return -EINVAL;
	for (uint32_t i = 0; i < a->n; i++)
		v4[i] = (struct fw_policy_prefix){.addr = a->v[i].addr, .mask = a->v[i].mask};
	for (uint32_t i = 0; i < a->n6; i++)
		v6[i] = (struct fw_policy_prefix6){a->v6[i].hi, a->v6[i].lo, a->v6[i].mhi,
						   a->v6[i].mlo};
	for (uint32_t i = 0; i < t->n; i++)
		tv4[i] = (struct fw_policy_prefix){.addr = t->v[i].addr, .mask = t->v[i].mask};
	for (uint32_t i = 0; i < t->n6; i++)
		tv6[i] = (struct fw_policy_prefix6){t->v6[i].hi, t->v6[i].lo, t->v6[i].mhi,
						    t->v6[i].mlo};
	for (uint32_t i = 0; i < c->net.reflector_ports.n; i++)
		ports[i] = (uint16_t)c->net.reflector_ports.v[i];
	int rc = fw_policy_init(p, v4, a->n, ports, c->net.reflector_ports.n);
	if (!rc)
		rc = fw_policy_set_allow6(p, v6, a->n6);
	if (!rc)
		rc = fw_policy_set_trusted(p, tv4, t->n, tv6, t->n6);
	if (rc) {
		snprintf(err, errlen,
			 "[net] allow, trusted, reflector_ports: lib/policy refused them");
		return rc;
	}
	for (uint32_t i = 0; i < t->n; i++)
		if (!fw_policy_allowed(p, p->trusted[i].addr))
			o |= 1u << i;
	for (uint32_t i = 0; i < t->n6; i++) {
		uint8_t b[16];
		for (int k = 0; k < 8; k++) {
			b[k] = (uint8_t)(p->trusted6[i].hi >> (56 - 8 * k));
			b[8 + k] = (uint8_t)(p->trusted6[i].lo >> (56 - 8 * k));
		}
		if (!fw_policy_allowed6(p, b))
			o6 |= 1u << i;
	}
	if (outside)
		*outside = o;
	if (outside6)
		*outside6 = o6;
	return 0;
}

FW_API bool fw_responder_rate_config(struct fw_rate_config *rc, const struct fw_conf *c,
				     uint32_t n_readers, uint64_t tsc_hz, uint32_t entries)
{
	fw_rate_config_default(rc);
	if (c->net.rate == 0)
		return false;
	fw_rate_share(c->net.rate, c->net.rate_burst, n_readers, &rc->rate, &rc->burst);
	rc->prefix_len = c->net.rate_prefix;
	rc->prefix_len6 = c->net.rate_prefix6;
	rc->slip = c->net.rate_slip;
	rc->tsc_hz = tsc_hz;
	rc->entries = entries;
	return true;
}

/* [fleet] identity: the name, env:VAR's value, or the host name. */
static int fleet_identity(struct fw_responder_fleet_config *f, const struct fw_conf *c, char *err,
			  size_t errlen)
{
	const char *id = c->fleet.identity;

	if (!strncmp(id, "env:", 4)) {
		/* the platform's name for this instance (Kubernetes' downward API) */
		const char *var = id + 4, *v = var[0] ? getenv(var) : NULL;
		if (v == NULL || !v[0]) {
			snprintf(err, errlen,
				 "[fleet] identity = %s: the environment variable %s is %s (e.g. "
				 "POD_NAME from the downward API: valueFrom.fieldRef.fieldPath "
				 "metadata.name)",
				 id, var[0] ? var : "(none named)", v ? "empty" : "not set");
			return -EINVAL;
		}
		snprintf(f->host, sizeof(f->host), "%s", v);
		f->fc.identity = f->host;
	} else if (id[0]) {
		f->fc.identity = id;
	} else {
		if (gethostname(f->host, sizeof(f->host)) != 0)
			snprintf(f->host, sizeof(f->host), "unknown");
		f->host[sizeof(f->host) - 1] = '\0';
		f->fc.identity = f->host;
	}
	return 0;
}

FW_API int fw_responder_fleet_config(struct fw_responder_fleet_config *f, const struct fw_conf *c,
				     const struct fw_layout *layout, const char *state_stamp,
				     char *err, size_t errlen)
{
	memset(f, 0, sizeof(*f));
	fw_fleet_config_default(&f->fc);
	f->fc.connect = c->fleet.zookeeper;
	f->etcd = (struct fw_fleet_etcd_opts){
		.endpoints = c->fleet.etcd,
		.ca_file = c->fleet.etcd_ca_file,
		.cert_file = c->fleet.etcd_cert_file,
		.key_file = c->fleet.etcd_key_file,
		.user = c->fleet.etcd_user,
		.password = f->password,
		.plain_password = c->fleet.etcd_plain_password != 0,
		.proxy = c->fleet.etcd_proxy,
		.session_ms = c->fleet.session_timeout_ms,
	};
	if (c->fleet.etcd[0]) {
		int prc = c->fleet.etcd_password_file[0]
				  ? fw_secret_read(c->fleet.etcd_password_file,
						   "[fleet] etcd_password_file", f->password,
						   sizeof(f->password), err, errlen)
				  : 0;
		if (prc != 0) {
			fw_responder_fleet_config_wipe(f);
			return prc;
		}
		f->fc.etcd = &f->etcd;
	}
	if (c->fleet.zookeeper_auth_file[0]) {
		int arc =
			fw_secret_read(c->fleet.zookeeper_auth_file, "[fleet] zookeeper_auth_file",
				       f->zk_auth, sizeof(f->zk_auth), err, errlen);
		if (arc == 0 && strchr(f->zk_auth, ':') == NULL) {
			snprintf(err, errlen,
				 "[fleet] zookeeper_auth_file = %s: not USER:PASSWORD on its first "
				 "line",
				 c->fleet.zookeeper_auth_file);
			arc = -EINVAL;
		}
		if (arc != 0) {
			fw_responder_fleet_config_wipe(f);
			return arc;
		}
		f->fc.zk_auth = f->zk_auth;
	}
	f->fc.root = c->fleet.root;
	int rc = fleet_identity(f, c, err, errlen);
	if (rc != 0) {
		fw_responder_fleet_config_wipe(f);
		return rc;
	}
	f->fc.cache_file = c->fleet.cache_file;
	if (!strcmp(c->fleet.cache_file, "auto")) {
		/* the cache belongs to its state: beside it; the former default is
		 * read once (the upgrade) when this state wrote it */
		snprintf(f->cache, sizeof(f->cache), "%s.fleet", c->state.file);
		f->fc.cache_file = f->cache;
		f->fc.legacy_cache_file = FW_RESPONDER_LEGACY_CACHE;
	}
	f->fc.state_stamp = state_stamp;
	f->fc.mark_file = c->state.file;
	f->fc.layout = *layout;
	f->fc.datacenter = c->id.datacenter;
	f->fc.lease_ms = c->fleet.lease_ms;
	f->fc.renew_ms = c->fleet.renew_ms;
	f->fc.session_timeout_ms = c->fleet.session_timeout_ms;
	f->fc.start_wait_ms = c->fleet.start_wait_ms;
	f->fc.max_offset_ms = c->fleet.max_offset_ms;
	f->new_worker = c->clock.backstep == FW_CONF_BACKSTEP_NEW_WORKER;
	return 0;
}

FW_API void fw_responder_fleet_config_wipe(struct fw_responder_fleet_config *f)
{
	explicit_bzero(f->password, sizeof(f->password));
	explicit_bzero(f->zk_auth, sizeof(f->zk_auth));
}
