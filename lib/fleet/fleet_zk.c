/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fw_fleet.h's entry points that pick a store: the registry (ZooKeeper, or
 * etcd when cfg->etcd is set) and the operators' tools (etcd when the
 * connect string is a list of http(s):// URLs).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_fleet_admin.h"
#include "fw_fleet_registry.h"
#include "fw_fleet_store_etcd.h"
#include "fw_fleet_store_zk.h"

int fw_fleet_create(const struct fw_fleet_config *cfg, uint32_t n_slots, struct fw_fleet **out,
		    char *err, size_t errlen)
{
	if (cfg == NULL || out == NULL)
		return -EINVAL;
	if (cfg->etcd != NULL) {
#ifdef FW_HAVE_ETCD
		if (cfg->root == NULL || strlen(cfg->root) >= 200)
			return fw_fleet_create_store(cfg, n_slots, NULL, out, err, errlen);
		char why[300] = "";
		if (fw_fleet_etcd_opts_check(cfg->etcd, why, sizeof(why)) != 0) {
			snprintf(err, errlen, "fleet: etcd: %s", why);
			return -EINVAL;
		}
		struct fw_fleet_store *e = fw_fleet_store_etcd_new(cfg->etcd, cfg->root);
		if (e == NULL)
			return -errno;
		return fw_fleet_create_store(cfg, n_slots, e, out, err, errlen);
#else
		snprintf(err, errlen, "fleet: built without etcd (libcurl and json-c)");
		return -ENOTSUP;
#endif
	}
	if (cfg->connect == NULL || !cfg->connect[0] || strlen(cfg->connect) >= 1024) {
		snprintf(err, errlen, "fleet: empty or too long ZooKeeper connect string");
		return -EINVAL;
	}
	if (cfg->root == NULL || strlen(cfg->root) >= 200) /* the rest: fw_fleet_create_store */
		return fw_fleet_create_store(cfg, n_slots, NULL, out, err, errlen);
	struct fw_fleet_store *s = fw_fleet_store_zk_new(cfg->connect, cfg->root,
							 cfg->session_timeout_ms, cfg->zk_auth);
	if (s == NULL)
		return -ENOMEM;
	return fw_fleet_create_store(cfg, n_slots, s, out, err, errlen);
}

/* The operators' tools' ZooKeeper credentials (fw_fleet_admin_zk_auth). */
static char admin_auth[512];
/* Why admin_store refused its arguments (never holds a secret). */
static char admin_why[320];

void fw_fleet_admin_zk_auth(const char *auth)
{
	explicit_bzero(admin_auth, sizeof(admin_auth));
	if (auth)
		snprintf(admin_auth, sizeof(admin_auth), "%s", auth);
}

/* @connect: a ZooKeeper connect string, or etcd endpoints (http:// or https://). */
static struct fw_fleet_store *admin_store(const char *connect, const char *root,
					  uint32_t timeout_ms)
{
	if (!strncmp(connect, "http://", 7) || !strncmp(connect, "https://", 8)) {
#ifdef FW_HAVE_ETCD
		struct fw_fleet_etcd_opts o = {
			.endpoints = connect,
			.session_ms = FW_MAX(timeout_ms, 2000u),
			.request_ms = FW_MAX(timeout_ms, 2000u),
			.ca_file = getenv("FW_ETCD_CA_FILE"),
			.cert_file = getenv("FW_ETCD_CERT_FILE"),
			.key_file = getenv("FW_ETCD_KEY_FILE"),
			.user = getenv("FW_ETCD_USER"),
			.password = getenv("FW_ETCD_PASSWORD"),
			.plain_password = getenv("FW_ETCD_PLAIN_PASSWORD") &&
					  !strcmp(getenv("FW_ETCD_PLAIN_PASSWORD"), "yes")};
		if (fw_fleet_etcd_opts_check(&o, admin_why, sizeof(admin_why)) != 0) {
			errno = EINVAL;
			return NULL;
		}
		return fw_fleet_store_etcd_new(&o, root);
#else
		errno = ENOTSUP;
		return NULL;
#endif
	}
	return fw_fleet_store_zk_new(connect, root, FW_MAX(timeout_ms, 2000u), admin_auth);
}

static int admin_fail(const char *connect, char *err, size_t errlen)
{
	int e = errno ? errno : ENOMEM;
	if (admin_why[0]) {
		snprintf(err, errlen, "fleet: etcd: %s", admin_why);
		admin_why[0] = '\0';
		return -e;
	}
	if (strchr(connect, '@') != NULL)
		connect = "the registry's address (user info not shown)";
	snprintf(err, errlen, "fleet: %s: %s", connect,
		 e == ENOTSUP  ? "built without etcd (libcurl and json-c)"
		 : e == EINVAL ? "not a ZooKeeper connect string nor etcd endpoints"
			       : strerror(e));
	return -e;
}

int fw_fleet_list_read(const char *connect, const char *root, uint32_t timeout_ms,
		       struct fw_fleet_list *out, char *err, size_t errlen)
{
	struct fw_fleet_store *s = admin_store(connect, root, timeout_ms);
	if (s == NULL) {
		memset(out, 0, sizeof(*out));
		return admin_fail(connect, err, errlen);
	}
	int rc = fw_fleet_list_store(s, root, timeout_ms, out, err, errlen);
	s->ops->free(s);
	return rc;
}

int fw_fleet_release(const char *connect, const char *root, uint32_t worker, unsigned flags,
		     uint32_t timeout_ms, char *err, size_t errlen)
{
	struct fw_fleet_store *s = admin_store(connect, root, timeout_ms);
	if (s == NULL)
		return admin_fail(connect, err, errlen);
	int rc = fw_fleet_release_store(s, root, worker, flags, timeout_ms, err, errlen);
	s->ops->free(s);
	return rc;
}

int fw_fleet_secure(const char *connect, const char *root, uint32_t timeout_ms, char *err,
		    size_t errlen)
{
	if (!strncmp(connect, "http://", 7) || !strncmp(connect, "https://", 8)) {
		snprintf(err, errlen, "fleet: securing is for ZooKeeper (etcd has its own users)");
		return -EINVAL;
	}
	struct fw_fleet_store *s = admin_store(connect, root, timeout_ms);
	if (s == NULL)
		return admin_fail(connect, err, errlen);
	int rc = fw_fleet_store_zk_secure(s, FW_MAX(timeout_ms, 2000u), err, errlen);
	s->ops->free(s);
	return rc;
}
