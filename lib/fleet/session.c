/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fw_err.h"
#include "fw_fleet_rec.h"
#include "fw_fleet_session.h"
#include "fw_time.h"

static int root_check(struct fw_fleet_session *ss, char *err, size_t errlen)
{
	struct fw_fleet_store *s = ss->store;
	char want[FW_FLEET_REC_MAX], have[FW_FLEET_REC_MAX];
	int have_len = 0, wl = fw_fleet_layout_format(want, sizeof(want), &ss->layout);
	int rc = s->ops->prepare(s, true, want, wl, have, &have_len);
	if (rc != 0) {
		snprintf(err, errlen, "fleet: %s: preparing %s: %s", s->name, ss->root,
			 s->ops->last_error(s));
		return rc == -EACCES ? FW_EFLEET_AUTH : FW_EFLEET_STORE;
	}
	struct fw_layout h;
	const struct fw_layout *l = &ss->layout;
	if (fw_fleet_layout_parse(have, have_len, &h) != 0) {
		snprintf(err, errlen, "fleet: %s holds no flakewire fleet layout", ss->root);
		return FW_EFLEET_LAYOUT;
	}
	if (!fw_fleet_layout_same(&h, l)) {
		snprintf(err, errlen,
			 "fleet: %s is a fleet with layout epoch %" PRIu64
			 " datacenter_bits %u worker_bits %u sequence_bits %u; this node has "
			 "epoch %" PRIu64 " datacenter_bits %u worker_bits %u sequence_bits %u: "
			 "every member of a fleet needs the same [id] layout",
			 ss->root, h.epoch_ms, h.dc_bits, h.worker_bits, h.seq_bits, l->epoch_ms,
			 l->dc_bits, l->worker_bits, l->seq_bits);
		return FW_EFLEET_LAYOUT;
	}
	return 0;
}

int fw_fleet_session_ensure(struct fw_fleet_session *ss, uint32_t wait_ms, uint32_t alive_wait_ms,
			    char *err, size_t errlen)
{
	struct fw_fleet_store *s = ss->store;
	if (s->ops->state(s) == FW_FLEET_SESSION_LOST)
		ss->root_ok = ss->alive_ok = false;
	int crc = s->ops->connect(s, wait_ms);
	if (crc != 0) {
		snprintf(err, errlen, "fleet: %s %s", s->name, s->ops->last_error(s));
		return crc == -EACCES ? FW_EFLEET_AUTH : FW_EFLEET_STORE;
	}
	if (!ss->root_ok) {
		int rc = root_check(ss, err, errlen);
		if (rc != 0)
			return rc;
		ss->root_ok = true;
	}
	if (ss->alive_ok)
		return 0;
	char data[64], p[512];
	int len = snprintf(data, sizeof(data), "pid=%d\n", (int)getpid());
	uint64_t deadline = fw_mono_ms() + alive_wait_ms;
	for (;;) {
		int rc = s->ops->alive_claim(s, ss->identity, data, len);
		if (rc == 0) {
			ss->alive_ok = true;
			return 0;
		}
		if (rc != -EEXIST) {
			snprintf(err, errlen, "fleet: %s: liveness of %s: %s", s->name,
				 ss->identity, s->ops->last_error(s));
			return rc == -EACCES ? FW_EFLEET_AUTH : FW_EFLEET_STORE;
		}
		if (alive_wait_ms == 0)
			return 0; /* running: retried every round */
		if (fw_mono_ms() >= deadline)
			break;
		usleep(200 * 1000);
	}
	fw_fleet_key_node(p, sizeof(p), ss->root, ss->identity);
	snprintf(err, errlen,
		 "fleet: identity %s is in use by another live %s session (%s exists): "
		 "another process with this identity, or this node's previous process less than "
		 "a session timeout ago; give each node its own [fleet] identity",
		 ss->identity, s->name, p);
	return FW_EFLEET_IDENTITY;
}

void fw_fleet_session_drop(struct fw_fleet_session *ss)
{
	ss->store->ops->close(ss->store);
	ss->root_ok = ss->alive_ok = false;
}
