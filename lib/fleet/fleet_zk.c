/* SPDX-License-Identifier: BSD-3-Clause */
/* fw_fleet.h's entry points that name ZooKeeper: the registry and the tools over store_zk.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fw_fleet_registry.h"
#include "fw_fleet_store_zk.h"

int fw_fleet_create(const struct fw_fleet_config *cfg, uint32_t n_slots, struct fw_fleet **out,
		    char *err, size_t errlen)
{
	if (cfg == NULL || out == NULL)
		return -EINVAL;
	if (cfg->connect == NULL || !cfg->connect[0] || strlen(cfg->connect) >= 1024) {
		snprintf(err, errlen, "fleet: empty or too long ZooKeeper connect string");
		return -EINVAL;
	}
	if (cfg->root == NULL || strlen(cfg->root) >= 200) /* the rest: fw_fleet_create_store */
		return fw_fleet_create_store(cfg, n_slots, NULL, out, err, errlen);
	struct fw_fleet_store *s =
		fw_fleet_store_zk_new(cfg->connect, cfg->root, cfg->session_timeout_ms);
	if (s == NULL)
		return -ENOMEM;
	return fw_fleet_create_store(cfg, n_slots, s, out, err, errlen);
}

static struct fw_fleet_store *admin_store(const char *connect, const char *root,
					  uint32_t timeout_ms)
{
	return fw_fleet_store_zk_new(connect, root, FW_MAX(timeout_ms, 2000u));
}

int fw_fleet_list_read(const char *connect, const char *root, uint32_t timeout_ms,
		       struct fw_fleet_list *out, char *err, size_t errlen)
{
	struct fw_fleet_store *s = admin_store(connect, root, timeout_ms);
	if (s == NULL) {
		memset(out, 0, sizeof(*out));
		return -ENOMEM;
	}
	int rc = fw_fleet_list_store(s, root, timeout_ms, out, err, errlen);
	s->ops->free(s);
	return rc;
}

int fw_fleet_release(const char *connect, const char *root, uint32_t worker, uint32_t timeout_ms,
		     char *err, size_t errlen)
{
	struct fw_fleet_store *s = admin_store(connect, root, timeout_ms);
	if (s == NULL)
		return -ENOMEM;
	int rc = fw_fleet_release_store(s, root, worker, timeout_ms, err, errlen);
	s->ops->free(s);
	return rc;
}
