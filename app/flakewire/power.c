/* SPDX-License-Identifier: BSD-3-Clause */
/* [power] idle: PMD power management and RX-interrupt sleep (see power.h). */
/* rte_power_pmd_mgmt.h and the RX interrupt calls are experimental in 22.11 */
#ifndef ALLOW_EXPERIMENTAL_API
#define ALLOW_EXPERIMENTAL_API 1
#endif
#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include <rte_cpuflags.h>
#include <rte_interrupts.h>
#include <rte_lcore.h>
#include <rte_power_intrinsics.h>
#include <rte_power_pmd_mgmt.h>

#include "app.h"
#include "log.h"
#include "power.h"

#define WAKE_MS 10 /* an idle lcore checks the stop flag this often */

/*
 * Idle state, per worker (index): written by that lcore only, every poll, so
 * each in a cache line of its own (no line written by two lcores).
 */
static struct {
	uint32_t empty;
	bool armed; /* its queues are in its epoll set */
} FW_CACHE_ALIGNED idle_state[RTE_MAX_LCORE];

/*
 * Counts a poll that brought @n frames: true once idle_polls empty polls came
 * in a row (the caller then idles); a poll with frames starts over. Pauses
 * on the empty polls before that.
 */
static inline bool idle_due(const struct fwire_app *app, typeof(idle_state[0]) *s, uint16_t n)
{
	if (n) {
		if (s->empty) /* a busy lcore does not store at all */
			s->empty = 0;
		return false;
	}
	if (++s->empty < app->conf.power.idle_polls) {
		rte_pause();
		return false;
	}
	return true;
}

void fwire_power_port_conf(const struct fwire_app *app, struct rte_eth_conf *conf)
{
	if (app->conf.power.idle == FW_CONF_IDLE_INTERRUPT)
		conf->intr_conf.rxq = 1;
}

static enum rte_power_pmd_mgmt_type pmgmt_type(uint32_t idle)
{
	switch (idle) {
	case FW_CONF_IDLE_MONITOR:
		return RTE_POWER_MGMT_TYPE_MONITOR;
	case FW_CONF_IDLE_SCALE:
		return RTE_POWER_MGMT_TYPE_SCALE;
	default:
		return RTE_POWER_MGMT_TYPE_PAUSE;
	}
}

int fwire_power_port_queues(struct fwire_app *app, const struct fwire_port *p)
{
	const struct fw_conf *c = &app->conf;
	uint32_t idle = c->power.idle;
	struct rte_cpu_intrinsics cpu;

	if (idle == FW_CONF_IDLE_BUSY)
		return 0;
	if (idle == FW_CONF_IDLE_SLEEP) {
		FW_LOG(INFO, "power: sleep %u us after %u empty polls on %s", c->power.sleep_us,
		       c->power.idle_polls, p->name);
		return 0;
	}
	if (idle == FW_CONF_IDLE_INTERRUPT)
		return 0; /* checked once the port runs: fwire_power_port_started() */
	rte_cpu_get_intrinsics_support(&cpu);
	if (idle == FW_CONF_IDLE_MONITOR && !cpu.power_monitor) {
		FW_LOG(ERR, "[power] idle = monitor: this CPU has no UMONITOR/UMWAIT (WAITPKG); "
			    "use pause or interrupt");
		return -1;
	}
	if (idle == FW_CONF_IDLE_PAUSE && !cpu.power_pause)
		FW_LOG(WARNING, "[power] idle = pause: this CPU has no TPAUSE (WAITPKG): DPDK "
				"pauses with a loop of PAUSE instructions, which saves some power "
				"but keeps the core busy; interrupt frees it");
	rte_power_pmd_mgmt_set_emptypoll_max(c->power.idle_polls);
	if (rte_power_pmd_mgmt_set_pause_duration(c->power.pause_us)) {
		FW_LOG(ERR, "[power] pause_us = %u: refused by DPDK", c->power.pause_us);
		return -1;
	}
	for (uint32_t i = 0; i < app->n_lcores; i++) {
		const struct fwire_lcore *lc = &app->lcore[i];
		int rc = rte_power_ethdev_pmgmt_queue_enable(lc->lcore_id, p->port_id, lc->queue,
							     pmgmt_type(idle));
		if (rc) {
			FW_LOG(ERR,
			       "[power] idle = %s: port %s queue %u on lcore %u: %s (the driver or "
			       "the platform does not support it: %s)",
			       fw_conf_power_idle_name(idle), p->name, lc->queue, lc->lcore_id,
			       rte_strerror(-rc),
			       idle == FW_CONF_IDLE_SCALE ? "scale needs cpufreq (acpi-cpufreq, "
							    "intel_pstate, cppc) in the guest"
							  : "try pause or interrupt");
			return -1;
		}
	}
	FW_LOG(INFO, "power: %s after %u empty polls on %s (%u queue(s))",
	       fw_conf_power_idle_name(idle), c->power.idle_polls, p->name, app->n_lcores);
	return 0;
}

int fwire_power_port_started(struct fwire_app *app, const struct fwire_port *p)
{
	if (app->conf.power.idle != FW_CONF_IDLE_INTERRUPT)
		return 0;
	/* the queues' event fds exist once the port runs: try each in this thread's set */
	for (uint32_t i = 0; i < app->n_lcores; i++) {
		uint16_t q = app->lcore[i].queue;
		int rc = rte_eth_dev_rx_intr_ctl_q(p->port_id, q, RTE_EPOLL_PER_THREAD,
						   RTE_INTR_EVENT_ADD, NULL);
		if (rc) {
			FW_LOG(ERR,
			       "[power] idle = interrupt: %s queue %u has no RX interrupt (%s); "
			       "use busy or pause",
			       p->name, q, rte_strerror(-rc));
			return -1;
		}
		rte_eth_dev_rx_intr_ctl_q(p->port_id, q, RTE_EPOLL_PER_THREAD, RTE_INTR_EVENT_DEL,
					  NULL);
	}
	FW_LOG(INFO, "power: interrupt after %u empty polls on %s", app->conf.power.idle_polls,
	       p->name);
	return 0;
}

/* Adds this lcore's queues to its epoll set; false when a driver has no RX interrupts. */
static bool arm(struct fwire_app *app, struct fwire_lcore *lc)
{
	for (uint32_t p = 0; p < app->n_ports; p++) {
		int rc = rte_eth_dev_rx_intr_ctl_q(app->port[p].port_id, lc->queue,
						   RTE_EPOLL_PER_THREAD, RTE_INTR_EVENT_ADD, NULL);
		if (rc) {
			FW_LOG(ERR, "[power] idle = interrupt: %s queue %u: no RX interrupt (%s)",
			       app->port[p].name, lc->queue, rte_strerror(-rc));
			return false;
		}
	}
	return true;
}

void fwire_power_interrupt_poll(struct fwire_app *app, struct fwire_lcore *lc, uint16_t n)
{
	typeof(idle_state[0]) *s = &idle_state[lc->index];
	struct rte_epoll_event ev[FW_CONF_PORTS_MAX];

	if (!idle_due(app, s, n))
		return;
	s->empty = 0;
	if (!s->armed) {
		if (!arm(app, lc)) {
			*app->quit = true; /* checked at start: not expected */
			return;
		}
		s->armed = true;
	}
	/* drivers whose queue fd is always armed (net_tap) have no enable: -ENOTSUP */
	for (uint32_t p = 0; p < app->n_ports; p++)
		rte_eth_dev_rx_intr_enable(app->port[p].port_id, lc->queue);
	/* a packet may have come between the last empty poll and the arming */
	bool pending = false;
	for (uint32_t p = 0; p < app->n_ports && !pending; p++)
		pending = rte_eth_rx_queue_count(app->port[p].port_id, lc->queue) > 0;
	if (!pending)
		rte_epoll_wait(RTE_EPOLL_PER_THREAD, ev, (int)app->n_ports, WAKE_MS);
	for (uint32_t p = 0; p < app->n_ports; p++)
		rte_eth_dev_rx_intr_disable(app->port[p].port_id, lc->queue);
}

void fwire_power_sleep_poll(struct fwire_app *app, struct fwire_lcore *lc, uint16_t n)
{
	typeof(idle_state[0]) *s = &idle_state[lc->index];

	if (!idle_due(app, s, n))
		return;
	if (!s->armed) {
		/* the default 50 us timer slack would add to every sleep */
		prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
		s->armed = true;
	}
	/* stay asleep-able: empty stays at the threshold until a packet comes */
	s->empty = app->conf.power.idle_polls;
	uint32_t us = app->conf.power.sleep_us;
	struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
	nanosleep(&ts, NULL);
}
