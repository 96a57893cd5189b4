/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The store factory (fw_fleet_store_open) and fw_fleet.h's entry points that
 * go through it: the registry (fw_fleet_create) and the operators' tools
 * (etcd when the connect string is a list of http(s):// URLs). The only file
 * that knows which store libraries this build has (FW_FLEET_HAVE_ZK,
 * FW_FLEET_HAVE_ETCD, set by lib/fleet/meson.build).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_fleet_admin.h"
#include "fw_fleet_registry.h"
#ifdef FW_FLEET_HAVE_ETCD
#include "fw_fleet_store_etcd.h"
#endif
#ifdef FW_FLEET_HAVE_ZK
#include "fw_fleet_store_zk.h"
#endif

int fw_fleet_store_open(const struct fw_fleet_store_conf *c, struct fw_fleet_store **out, char *err,
			size_t errlen)
{
	*out = NULL;
	if (c->root == NULL || strlen(c->root) >= 200) {
		snprintf(err, errlen, "fleet: root too long");
		return -EINVAL;
	}
	if (c->etcd != NULL) {
#ifdef FW_FLEET_HAVE_ETCD
		char why[300] = "";
		if (fw_fleet_etcd_opts_check(c->etcd, why, sizeof(why)) != 0) {
			snprintf(err, errlen, "fleet: etcd: %s", why);
			return -EINVAL;
		}
		*out = fw_fleet_store_etcd_new(c->etcd, c->root);
		if (*out == NULL) {
			snprintf(err, errlen, "fleet: etcd: %s", strerror(errno));
			return -errno;
		}
		return 0;
#else
		snprintf(err, errlen, "fleet: built without etcd (libcurl and json-c)");
		return -ENOTSUP;
#endif
	}
	if (c->zookeeper == NULL || !c->zookeeper[0] || strlen(c->zookeeper) >= 1024) {
		snprintf(err, errlen, "fleet: empty or too long ZooKeeper connect string");
		return -EINVAL;
	}
#ifdef FW_FLEET_HAVE_ZK
	*out = fw_fleet_store_zk_new(c->zookeeper, c->root, c->session_ms, c->zk_auth);
	if (*out == NULL) {
		snprintf(err, errlen, "fleet: ZooKeeper: %s", strerror(errno));
		return -errno;
	}
	return 0;
#else
	snprintf(err, errlen, "fleet: built without ZooKeeper (libzookeeper-mt-dev)");
	return -ENOTSUP;
#endif
}

int fw_fleet_create(const struct fw_fleet_config *cfg, uint32_t n_slots, struct fw_fleet **out,
		    char *err, size_t errlen)
{
	if (cfg == NULL || out == NULL)
		return -EINVAL;
	if (cfg->etcd == NULL &&
	    (cfg->connect == NULL || !cfg->connect[0] || strlen(cfg->connect) >= 1024)) {
		snprintf(err, errlen, "fleet: empty or too long ZooKeeper connect string");
		return -EINVAL;
	}
	if (cfg->root == NULL || strlen(cfg->root) >= 200) /* the rest: fw_fleet_create_store */
		return fw_fleet_create_store(cfg, n_slots, NULL, out, err, errlen);
	struct fw_fleet_store *s;
	struct fw_fleet_store_conf sc = {.etcd = cfg->etcd,
					 .zookeeper = cfg->connect,
					 .zk_auth = cfg->zk_auth,
					 .root = cfg->root,
					 .session_ms = cfg->session_timeout_ms};
	int rc = fw_fleet_store_open(&sc, &s, err, errlen);
	if (rc != 0)
		return rc;
	return fw_fleet_create_store(cfg, n_slots, s, out, err, errlen);
}

/* The operators' tools' ZooKeeper credentials (fw_fleet_admin_zk_auth). */
static char admin_auth[512];

void fw_fleet_admin_zk_auth(const char *auth)
{
	explicit_bzero(admin_auth, sizeof(admin_auth));
	if (auth)
		snprintf(admin_auth, sizeof(admin_auth), "%s", auth);
}

static bool is_etcd(const char *connect)
{
	return !strncmp(connect, "http://", 7) || !strncmp(connect, "https://", 8);
}

/*
 * @connect: a ZooKeeper connect string, or etcd endpoints (http:// or
 * https://; the credentials from FW_ETCD_* in the environment). Returns
 * fw_fleet_store_open's code; @err never shows user info.
 */
static int admin_store(const char *connect, const char *root, uint32_t timeout_ms,
		       struct fw_fleet_store **out, char *err, size_t errlen)
{
	const char *pp = getenv("FW_ETCD_PLAIN_PASSWORD");
	struct fw_fleet_etcd_opts o = {.endpoints = connect,
				       .session_ms = FW_MAX(timeout_ms, 2000u),
				       .request_ms = FW_MAX(timeout_ms, 2000u),
				       .ca_file = getenv("FW_ETCD_CA_FILE"),
				       .cert_file = getenv("FW_ETCD_CERT_FILE"),
				       .key_file = getenv("FW_ETCD_KEY_FILE"),
				       .user = getenv("FW_ETCD_USER"),
				       .password = getenv("FW_ETCD_PASSWORD"),
				       .plain_password = pp && !strcmp(pp, "yes")};
	struct fw_fleet_store_conf sc = {.etcd = is_etcd(connect) ? &o : NULL,
					 .zookeeper = connect,
					 .zk_auth = admin_auth,
					 .root = root,
					 .session_ms = FW_MAX(timeout_ms, 2000u)};
	char why[512];
	int rc = fw_fleet_store_open(&sc, out, why, sizeof(why));
	if (rc == 0)
		return 0;
	if (rc == -EINVAL && sc.etcd != NULL) {
		snprintf(err, errlen, "%s", why); /* etcd's own check: no secret in it */
		return rc;
	}
	if (strchr(connect, '@') != NULL)
		connect = "the registry's address (user info not shown)";
	snprintf(err, errlen, "fleet: %s: %s", connect,
		 rc == -ENOTSUP  ? why + strlen("fleet: ")
		 : rc == -EINVAL ? "not a ZooKeeper connect string nor etcd endpoints"
				 : strerror(-rc));
	return rc;
}

int fw_fleet_list_read(const char *connect, const char *root, uint32_t timeout_ms,
		       struct fw_fleet_list *out, char *err, size_t errlen)
{
	struct fw_fleet_store *s;
	int rc = admin_store(connect, root, timeout_ms, &s, err, errlen);
	if (rc != 0) {
		memset(out, 0, sizeof(*out));
		return rc;
	}
	rc = fw_fleet_list_store(s, root, timeout_ms, out, err, errlen);
	s->ops->free(s);
	return rc;
}

int fw_fleet_release(const char *connect, const char *root, uint32_t worker, unsigned flags,
		     uint32_t timeout_ms, char *err, size_t errlen)
{
	struct fw_fleet_store *s;
	int rc = admin_store(connect, root, timeout_ms, &s, err, errlen);
	if (rc != 0)
		return rc;
	rc = fw_fleet_release_store(s, root, worker, flags, timeout_ms, err, errlen);
	s->ops->free(s);
	return rc;
}

int fw_fleet_secure(const char *connect, const char *root, uint32_t timeout_ms, char *err,
		    size_t errlen)
{
	if (is_etcd(connect)) {
		snprintf(err, errlen, "fleet: securing is for ZooKeeper (etcd has its own users)");
		return -EINVAL;
	}
#ifdef FW_FLEET_HAVE_ZK
	struct fw_fleet_store *s;
	int rc = admin_store(connect, root, timeout_ms, &s, err, errlen);
	if (rc != 0)
		return rc;
	rc = fw_fleet_store_zk_secure(s, FW_MAX(timeout_ms, 2000u), err, errlen);
	s->ops->free(s);
	return rc;
#else
	(void)root, (void)timeout_ms;
	snprintf(err, errlen, "fleet: %s: built without ZooKeeper (libzookeeper-mt-dev)",
		 strchr(connect, '@') ? "the registry's address (user info not shown)" : connect);
	return -ENOTSUP;
#endif
}

int fw_fleet_init(const char *connect, const char *root, const struct fw_layout *l,
		  uint32_t datacenter, const char *reserve, uint32_t timeout_ms, char *err,
		  size_t errlen)
{
	struct fw_fleet_store *s;
	int rc = admin_store(connect, root, timeout_ms, &s, err, errlen);
	if (rc != 0)
		return rc;
	rc = fw_fleet_init_store(s, root, l, datacenter, reserve, timeout_ms, err, errlen);
	s->ops->free(s);
	return rc;
}

int fw_fleet_static_check(const struct fw_fleet_config *cfg, const uint32_t *workers, uint32_t n,
			  char *err, size_t errlen)
{
	if (cfg == NULL || cfg->root == NULL || cfg->root[0] != '/') {
		snprintf(err, errlen, "fleet: root '%s': not an absolute path",
			 cfg && cfg->root ? cfg->root : "");
		return -EINVAL;
	}
	struct fw_fleet_store *s;
	struct fw_fleet_store_conf sc = {.etcd = cfg->etcd,
					 .zookeeper = cfg->connect,
					 .zk_auth = cfg->zk_auth,
					 .root = cfg->root,
					 .session_ms = cfg->session_timeout_ms};
	int rc = fw_fleet_store_open(&sc, &s, err, errlen);
	if (rc != 0)
		return rc;
	rc = fw_fleet_static_store(s, cfg->root, &cfg->layout, cfg->datacenter, workers, n,
				   FW_MAX(cfg->start_wait_ms, 1000u), err, errlen);
	s->ops->free(s);
	return rc;
}

int fw_fleet_fence(const char *connect, const char *root, const struct fw_layout *l,
		   uint32_t datacenter, const char *reserve, uint64_t lease_ms, uint32_t timeout_ms,
		   uint64_t *fence_unix, char *err, size_t errlen)
{
	struct fw_fleet_store *s;
	int rc = admin_store(connect, root, timeout_ms, &s, err, errlen);
	if (rc != 0)
		return rc;
	rc = fw_fleet_fence_store(s, root, l, datacenter, reserve, lease_ms, timeout_ms, fence_unix,
				  err, errlen);
	s->ops->free(s);
	return rc;
}
