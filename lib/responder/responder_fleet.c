/* SPDX-License-Identifier: BSD-3-Clause */
/* The fleet from the configuration (the contract is in fw_responder_fleet.h). */
#include "fw_responder_fleet.h"

FW_API int fw_responder_fleet_start(const struct fw_conf *c, const struct fw_layout *layout,
				    uint32_t n_workers, const char *state_stamp, struct fw_log log,
				    struct fw_fleet_app **out, char *err, size_t errlen)
{
	struct fw_responder_fleet_config f;
	struct fw_fleet *reg = NULL;

	*out = NULL;
	if (!fw_conf_fleet_store(c))
		return 0;
	int rc = fw_responder_fleet_config(&f, c, layout, state_stamp, err, errlen);
	if (rc != 0)
		return rc;
	if (!fw_conf_fleet_on(c)) { /* [fleet] static = yes: its IDs must be reserved */
		uint32_t ids[FW_FLEET_SLOTS_MAX];
		uint32_t n = n_workers < FW_FLEET_SLOTS_MAX ? n_workers : FW_FLEET_SLOTS_MAX;
		for (uint32_t i = 0; i < n; i++)
			ids[i] = (uint32_t)fw_conf_worker(c, i);
		f.fc.log = log;
		rc = fw_fleet_static_check(&f.fc, ids, n, err, errlen);
		fw_responder_fleet_config_wipe(&f);
		return rc;
	}
	f.fc.log = log;
	/* a full root: start not ready (NO_LEASE, /readyz 503) and claim once IDs are free */
	f.fc.start_when_full = true;
	rc = fw_fleet_create(&f.fc, n_workers, &reg, err, errlen);
	fw_responder_fleet_config_wipe(&f); /* the store keeps its own copy */
	if (rc == 0) {
		bool cached;
		rc = fw_fleet_start(reg, &cached, err, errlen);
	}
	if (rc == 0)
		rc = fw_fleet_app_create(reg, n_workers, layout->epoch_ms, f.new_worker, log, out);
	else
		fw_fleet_free(reg);
	return rc;
}
