/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The responders' configuration: one table (conf.c) describes every setting
 * (section, key, type, range, default, help). Loading an INI file (parsed
 * with libinih; no DPDK), `--set section.key=value` overrides, the `--help`
 * text and the sample config/flakewire.ini all come from it.
 *
 * Order of use: fw_conf_init() (defaults), fw_conf_load() (file), any number
 * of fw_conf_set() (command line), then fw_conf_check() (cross-key rules).
 *
 * Programs without DPDK ports (flakesock) pass FW_CONF_F_NO_PORTS: the
 * [portN] sections are then skipped when loading, ignored by fw_conf_set()
 * and left out of the help and the sample, so both programs read one file.
 *
 * Errors: every function taking @err writes one line there (no newline),
 * for example "config: [id] worker_bits = 30: out of range (0-16)", and
 * returns FW_ECONF. Nothing here prints or exits.
 *
 * Manual: doc/responders.md#configuration.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fw_common.h"

#define FW_CONF_STR_LEN   256 /* longest string value, NUL included */
#define FW_CONF_LIST_MAX  64  /* most entries in [id] workers */
#define FW_CONF_CIDRS_MAX 16  /* most prefixes in [net] trusted */
#define FW_CONF_PORTS_MAX 4   /* [port0] .. [port3] */
#define FW_CONF_ADDR6_MAX 4   /* most IPv6 addresses in [portN] address6 */

/* fw_conf_load/set/check/help/sample flags */
#define FW_CONF_F_NO_PORTS 0x1u /* not a DPDK program: skip and hide [portN] */

/* [state] start_policy: what to do when the system clock is behind the mark. */
enum fw_conf_start_policy {
	/* start; refuse (CLOCK_UNSAFE, RETRY_AFTER) until the clock passes the mark */
	FW_CONF_START_WAIT = 0,
	/* exit at start if the clock is behind the mark by more than mark_ahead_ms */
	FW_CONF_START_FAIL = 1,
};

/* [clock] backstep: the answer to a backward step of the system clock beyond step_ms. */
enum fw_conf_backstep {
	FW_CONF_BACKSTEP_SLEW = 0,       /* keep issuing from flakewire's clock, slew slowly */
	FW_CONF_BACKSTEP_NEW_WORKER = 1, /* (fleet) retire each worker ID, claim fresh ones */
};

/* [power] idle: what a worker lcore does while no packets arrive (flakewire). */
enum fw_conf_power_idle {
	FW_CONF_IDLE_BUSY = 0,      /* poll (rte_pause between empty polls) */
	FW_CONF_IDLE_PAUSE = 1,     /* rte_power PMD management, RTE_POWER_MGMT_TYPE_PAUSE */
	FW_CONF_IDLE_MONITOR = 2,   /* RTE_POWER_MGMT_TYPE_MONITOR */
	FW_CONF_IDLE_SCALE = 3,     /* RTE_POWER_MGMT_TYPE_SCALE */
	FW_CONF_IDLE_INTERRUPT = 4, /* RX interrupts + epoll */
	FW_CONF_IDLE_SLEEP = 5,     /* nanosleep(sleep_us) after idle_polls empty polls */
};

struct fw_conf_u32_list {
	uint32_t n;
	uint32_t v[FW_CONF_LIST_MAX];
};

/*
 * IPv4 prefixes, host byte order: a source s matches when (s & mask) == addr.
 * IPv6 prefixes (v6, n6) as two host-order 64-bit halves of the address
 * (hi: bytes 0-7) and of the mask; a list may hold both families, at most
 * FW_CONF_CIDRS_MAX of each.
 */
struct fw_conf_cidrs {
	uint32_t n;
	struct {
		uint32_t addr;
		uint32_t mask;
	} v[FW_CONF_CIDRS_MAX];
	uint32_t n6;
	struct {
		uint64_t hi, lo;
		uint64_t mhi, mlo;
	} v6[FW_CONF_CIDRS_MAX];
};

/* [portN] address6: the port's IPv6 addresses (16 bytes each, network order). */
struct fw_conf_addr6s {
	uint32_t n;
	uint8_t a[FW_CONF_ADDR6_MAX][16];
};

/* [portN] mode: how the port reaches the network. */
enum fw_conf_port_mode {
	/* a device DPDK owns: PCI address or vdev devargs in `device` */
	FW_CONF_PORT_DPDK = 0,
	/*
	 * a kernel interface (`iface`) shared through net_af_xdp: flakewire
	 * builds the devargs, loads its XDP program (`xdp_prog`) and answers
	 * with the interface's own MAC and IPv4 address (`address` unused).
	 */
	FW_CONF_PORT_AF_XDP = 1,
};

struct fw_conf_port {
	char device[FW_CONF_STR_LEN]; /* PCI address or vdev devargs */
	uint32_t mode;                /* enum fw_conf_port_mode */
	char iface[FW_CONF_STR_LEN];  /* af_xdp: kernel interface name */
	uint32_t start_queue;         /* af_xdp: first interface queue used */
	uint32_t address;             /* IPv4, host byte order */
	/* af_xdp: XDP object to load; "": the one built with flakewire */
	char xdp_prog[FW_CONF_STR_LEN];
	uint32_t rx_desc;
	uint32_t tx_desc;
	struct fw_conf_addr6s address6; /* IPv6; af_xdp: the interface's own */
};

struct fw_conf {
	struct {
		uint64_t epoch_ms;
		uint32_t datacenter_bits;
		uint32_t worker_bits;
		uint32_t sequence_bits;
		uint32_t datacenter;
		struct fw_conf_u32_list workers; /* empty: worker_base + i */
		uint32_t worker_base;
		uint32_t max_borrow_ms;
		uint32_t max_backstep_ms;
		uint32_t retry_us;
	} id;
	struct {
		uint32_t calibrate_ms;
		uint32_t reanchor_ms;
		uint32_t max_slew_ppm;
		uint32_t step_ms;
		uint32_t backstep; /* enum fw_conf_backstep */
	} clock;
	struct {
		char file[FW_CONF_STR_LEN];
		char lock_dir[FW_CONF_STR_LEN]; /* static worker IDs' host-wide locks */
		uint32_t lock_dir_mount;        /* 1: lock_dir must be a mount point */
		uint32_t mark_ahead_ms;
		uint32_t start_policy; /* enum fw_conf_start_policy */
	} state;
	struct {
		uint32_t udp_port;
		struct fw_conf_cidrs trusted;
		uint32_t list_max;
		uint32_t ranges_max;
		/* hostile traffic (flakewire; flakesock does not enforce these) */
		struct fw_conf_cidrs allow;              /* sources answered at all */
		struct fw_conf_u32_list reflector_ports; /* source ports never answered */
		uint32_t rate;                           /* requests/s per prefix, 0: off */
		uint32_t rate_burst;
		uint32_t rate_prefix;         /* prefix length sources are grouped by */
		uint32_t rate_slip;           /* every Nth limited request answered, 0: never */
		uint32_t max_ids_per_request; /* RANGE counts are capped to this */
		uint32_t max_reply_bytes;     /* UDP payload of any reply, trusted included */
		uint32_t rate_prefix6;        /* IPv6 prefix length sources are grouped by */
	} net;
	struct {
		uint32_t interval_s; /* 0: off */
	} stats;
	/*
	 * [fleet]: worker IDs claimed through a registry (lib/fleet): ZooKeeper
	 * (zookeeper) or etcd (etcd), at most one set; both "": off
	 */
	struct {
		char zookeeper[FW_CONF_STR_LEN];
		char etcd[FW_CONF_STR_LEN]; /* "http[s]://HOST:PORT,..." */
		char etcd_ca_file[FW_CONF_STR_LEN];
		char etcd_cert_file[FW_CONF_STR_LEN];
		char etcd_key_file[FW_CONF_STR_LEN];
		char etcd_user[FW_CONF_STR_LEN];
		char etcd_password_file[FW_CONF_STR_LEN];
		char zookeeper_auth_file[FW_CONF_STR_LEN]; /* digest "user:password" */
		uint32_t etcd_plain_password;              /* 1: a password over http:// allowed */
		char etcd_proxy[FW_CONF_STR_LEN];
		char root[FW_CONF_STR_LEN]; /* "": none (required with a store) */
		uint32_t static_node; /* [fleet] static: 1 = static IDs checked against root */
		char identity[FW_CONF_STR_LEN]; /* "": the host name */
		uint32_t lease_ms;
		uint32_t renew_ms;
		uint32_t session_timeout_ms;
		uint32_t start_wait_ms;
		char cache_file[FW_CONF_STR_LEN];
		uint32_t max_offset_ms;
	} fleet;
	struct {
		char listen[FW_CONF_STR_LEN]; /* "ADDR:PORT" of the /metrics endpoint; "": off */
	} metrics;
	struct {
		uint32_t idle;       /* enum fw_conf_power_idle */
		uint32_t idle_polls; /* empty polls before sleeping */
		uint32_t pause_us;   /* pause mode: one pause */
		uint32_t sleep_us;   /* sleep mode: one sleep */
	} power;
	uint32_t n_ports; /* sections [port0] .. [port(n-1)] given; 0 means port0 defaults */
	struct fw_conf_port port[FW_CONF_PORTS_MAX];
};

/* Fills *c with every default (n_ports 1: port0 with its defaults). */
FW_API void fw_conf_init(struct fw_conf *c);

/*
 * Loads the INI file @path over *c ('#' or ';' start a comment).
 * Errors: the file cannot be read or parsed, an unknown section or key, a
 * key given twice in one section, a bad value (names key, value and the
 * allowed range or values). Returns 0 or FW_ECONF; on error *c may hold the
 * keys before the bad one.
 */
FW_API int fw_conf_load(struct fw_conf *c, const char *path, unsigned flags, char *err,
			size_t errlen);

/*
 * Applies one override "section.key=value" (for example "id.worker_bits=8",
 * "port1.device=net_tap1,iface=fw1"). Returns 0 or FW_ECONF.
 */
FW_API int fw_conf_set(struct fw_conf *c, const char *assignment, unsigned flags, char *err,
		       size_t errlen);

/* Same with the parts apart. */
FW_API int fw_conf_set_kv(struct fw_conf *c, const char *section, const char *key,
			  const char *value, unsigned flags, char *err, size_t errlen);

/*
 * Rules across keys: the widths leave at least 32 timestamp bits, the
 * datacenter and every worker fit their widths, no duplicate worker, port
 * sections numbered without gaps, no two ports with one device or address;
 * an af_xdp port names an iface no other af_xdp port uses.
 * Returns 0 or FW_ECONF.
 */
FW_API int fw_conf_check(const struct fw_conf *c, unsigned flags, char *err, size_t errlen);

/*
 * Worker ID of worker @i (0-based): workers[i] when the list is given,
 * worker_base + i otherwise. Returns -1 when the list is given and shorter
 * than i + 1.
 */
/* True when [fleet] names a registry (zookeeper or etcd) and static = no: worker IDs are
 * claimed. */
FW_API bool fw_conf_fleet_on(const struct fw_conf *c);

/* True when [fleet] names a registry (zookeeper or etcd), static node or not. */
FW_API bool fw_conf_fleet_store(const struct fw_conf *c);

FW_API int64_t fw_conf_worker(const struct fw_conf *c, uint32_t i);

/* True when the IPv4 address @addr (host byte order) is in the trusted set. */
static inline bool fw_conf_trusted(const struct fw_conf_cidrs *t, uint32_t addr)
{
	for (uint32_t i = 0; i < t->n; i++)
		if ((addr & t->v[i].mask) == t->v[i].addr)
			return true;
	return false;
}

/* True when the IPv6 address @a (16 bytes, network order) is in the trusted set. */
static inline bool fw_conf_trusted6(const struct fw_conf_cidrs *t, const uint8_t *a)
{
	uint64_t hi = 0, lo = 0;

	if (t->n6 == 0)
		return false;
	for (int i = 0; i < 8; i++) {
		hi = hi << 8 | a[i];
		lo = lo << 8 | a[8 + i];
	}
	for (uint32_t i = 0; i < t->n6; i++)
		if ((hi & t->v6[i].mhi) == t->v6[i].hi && (lo & t->v6[i].mlo) == t->v6[i].lo)
			return true;
	return false;
}

/*
 * Writes the sample INI file (every key, its default and its help as
 * comments) into @buf, snprintf-style: returns the full length, writes at
 * most @cap bytes, NUL-terminated when @cap > 0.
 */
FW_API size_t fw_conf_sample(char *buf, size_t cap, unsigned flags);

/*
 * Writes the configuration in effect in @c (defaults, file and --set applied)
 * as an INI file that loads back to the same values: every key with its
 * value, its range, and its default where the value differs. snprintf-style
 * as fw_conf_sample. (`flakewire --print-config --config FILE`, `flakesock
 * --print-config`: what a node will run, as `nginx -T` shows it.)
 */
FW_API size_t fw_conf_effective(const struct fw_conf *c, char *buf, size_t cap, unsigned flags);

/*
 * Writes fw_conf_effective's text for @c (with @flags) to @f: `--print-config`
 * of both responders. @c NULL writes fw_conf_sample's text instead (flakewire's
 * `--print-config` alone: every default with its help). Writes nothing else.
 * Returns 0, -ENOMEM (nothing written) or -EIO (@f reported a write error).
 */
FW_API int fw_conf_print(FILE *f, const struct fw_conf *c, unsigned flags);

/* Same for the settings part of --help: one entry per key with type, range and default. */
FW_API size_t fw_conf_help(char *buf, size_t cap, unsigned flags);

/* Name of a port mode ("dpdk", "af_xdp"). */
FW_API const char *fw_conf_port_mode_name(uint32_t m);

/* Name of a [clock] backstep value ("slew", "new_worker"). */
FW_API const char *fw_conf_backstep_name(uint32_t b);

/* Name of a start policy ("wait", "fail"). */
FW_API const char *fw_conf_start_policy_name(uint32_t p);

/* Name of a [power] idle mode ("busy", "pause", "monitor", "scale", "interrupt", "sleep"). */
FW_API const char *fw_conf_power_idle_name(uint32_t i);
