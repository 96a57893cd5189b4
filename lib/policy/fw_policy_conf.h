/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The source policy and the rate limiter's settings from the configuration
 * file: the one mapping of [net] allow, trusted, reflector_ports and rate*
 * to lib/policy that both responders use (flakewire's lcores, flakesock's
 * workers). Header only, so lib/policy itself does not depend on lib/conf.
 */
#pragma once

#include <errno.h>

#include "fw_conf.h"
#include "fw_policy.h"

/*
 * Initialises *p from [net] allow (both families), trusted (both families)
 * and reflector_ports of @c. *@outside and *@outside6 (either may be NULL)
 * get bit i set for each trusted prefix i (IPv4, IPv6) that no allowed
 * prefix covers: such a source is never answered, which the caller reports.
 * Returns 0, or -EINVAL when a list is longer than FW_POLICY_PREFIXES_MAX.
 */
static inline int fw_policy_from_conf(struct fw_policy *p, const struct fw_conf *c,
				      uint32_t *outside, uint32_t *outside6)
{
	const struct fw_conf_cidrs *a = &c->net.allow, *t = &c->net.trusted;
	struct fw_policy_prefix v4[FW_POLICY_PREFIXES_MAX], tv4[FW_POLICY_PREFIXES_MAX];
	struct fw_policy_prefix6 v6[FW_POLICY_PREFIXES_MAX], tv6[FW_POLICY_PREFIXES_MAX];
	uint16_t ports[FW_CONF_LIST_MAX];
	uint32_t o = 0, o6 = 0;

	if (a->n > FW_POLICY_PREFIXES_MAX || a->n6 > FW_POLICY_PREFIXES_MAX ||
	    t->n > FW_POLICY_PREFIXES_MAX || t->n6 > FW_POLICY_PREFIXES_MAX ||
	    c->net.reflector_ports.n > FW_CONF_LIST_MAX)
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
	if (rc)
		return rc;
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

/*
 * Fills *rc for one of @n_readers rate tables from [net] rate, rate_burst
 * (their share: fw_rate_share), rate_prefix, rate_prefix6 and rate_slip of
 * @c, with @tsc_hz and @entries. The caller sets the seed.
 * Returns true, or false when [net] rate is 0 (no limit: no table).
 */
static inline bool fw_rate_config_from_conf(struct fw_rate_config *rc, const struct fw_conf *c,
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
