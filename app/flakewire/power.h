/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * power.c: [power] idle, what a worker lcore does while no packets arrive.
 *   busy       rte_pause() between empty polls (the default: lowest latency)
 *   pause, monitor, scale
 *              DPDK's PMD power management (rte_power_ethdev_pmgmt_queue_enable):
 *              an RX callback that, after [power] idle_polls empty polls,
 *              pauses (TPAUSE, else a PAUSE loop), waits on the queue's
 *              descriptor (UMWAIT: WAITPKG and driver support) or lowers the
 *              core frequency (cpufreq)
 *   interrupt  after idle_polls empty polls the lcore arms its queues' RX
 *              interrupts and sleeps in epoll until a packet (or 10 ms) comes:
 *              the core is free meanwhile
 *   sleep      after idle_polls empty polls, nanosleep([power] sleep_us): any
 *              driver (net_af_xdp has no RX interrupts in 22.11); the first
 *              packet after a quiet spell waits up to sleep_us
 * Hooks: fwire_power_port_conf() before rte_eth_dev_configure,
 * fwire_power_port_queues() before rte_eth_dev_start, fwire_power_port_started()
 * after it, fwire_power_poll() once per turn of the burst loop.
 */
#pragma once

#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_pause.h>

struct fwire_app;
struct fwire_lcore;
struct fwire_port;

/* Adds what the mode needs to the port configuration (RX interrupts). */
void fwire_power_port_conf(const struct fwire_app *app, struct rte_eth_conf *conf);

/*
 * Enables PMD power management on every (lcore, queue) of the port, queues
 * set up, port not started. Returns 0 or -1 with the reason logged (the
 * driver or the CPU lacks the mode).
 */
int fwire_power_port_queues(struct fwire_app *app, const struct fwire_port *p);

/*
 * After rte_eth_dev_start: interrupt mode checks that every queue has an RX
 * interrupt. Returns 0 or -1 (logged).
 */
int fwire_power_port_started(struct fwire_app *app, const struct fwire_port *p);

/* Interrupt and sleep modes: count empty turns, sleep when idle long enough. */
void fwire_power_interrupt_poll(struct fwire_app *app, struct fwire_lcore *lc, uint16_t n);
void fwire_power_sleep_poll(struct fwire_app *app, struct fwire_lcore *lc, uint16_t n);

/* Once per turn of the burst loop, with the packets the turn received. */
static inline void fwire_power_poll(struct fwire_app *app, struct fwire_lcore *lc, uint16_t n,
				    uint32_t idle_mode)
{
	if (idle_mode == 4 /* FW_CONF_IDLE_INTERRUPT */)
		fwire_power_interrupt_poll(app, lc, n);
	else if (idle_mode == 5 /* FW_CONF_IDLE_SLEEP */)
		fwire_power_sleep_poll(app, lc, n);
	else if (!n)
		rte_pause();
}
