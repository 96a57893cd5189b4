/* SPDX-License-Identifier: BSD-3-Clause */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ini.h>

#include "fw_conf.h"
#include "fw_err.h"

enum conf_type {
	T_U32,
	T_U64,
	T_STR,
	T_IPV4,
	T_U32_LIST,
	T_CIDRS,
	T_ENUM,
	T_IPV6S,
};

struct conf_key {
	const char *section; /* "port" for the [portN] sections */
	const char *key;
	enum conf_type type;
	uint64_t min, max; /* numbers and list elements */
	const char *def;
	const char *help;
	size_t off; /* in struct fw_conf, or in struct fw_conf_port for "port" */
};

struct conf_section {
	const char *name;
	bool dpdk; /* [portN]: indexed, skipped with FW_CONF_F_NO_PORTS */
	const char *help;
};

static const char *const start_policies[] = {"wait", "fail"};
static const char *const port_modes[] = {"dpdk", "af_xdp"};
static const char *const backsteps[] = {"slew", "new_worker"};
static const char *const no_yes[] = {"no", "yes"};
static const char *const power_idles[] = {"busy",  "pause",     "monitor",
					  "scale", "interrupt", "sleep"};

/* Each T_ENUM key and the names it accepts, in value order: a new enum key adds a line. */
static const struct {
	const char *key;
	const char *const *names;
	size_t n;
} enums[] = {
	{"start_policy", start_policies, FW_ARRAY_SIZE(start_policies)},
	{"mode", port_modes, FW_ARRAY_SIZE(port_modes)},
	{"backstep", backsteps, FW_ARRAY_SIZE(backsteps)},
	{"idle", power_idles, FW_ARRAY_SIZE(power_idles)},
	{"etcd_plain_password", no_yes, FW_ARRAY_SIZE(no_yes)},
	{"lock_dir_mount", no_yes, FW_ARRAY_SIZE(no_yes)},
	{"static", no_yes, FW_ARRAY_SIZE(no_yes)},
};

static const char *const *enum_names(const struct conf_key *k, size_t *n)
{
	for (size_t i = 0; i < FW_ARRAY_SIZE(enums); i++) {
		if (!strcmp(k->key, enums[i].key)) {
			*n = enums[i].n;
			return enums[i].names;
		}
	}
	*n = 0; /* not listed: every value is rejected, the defaults included */
	return NULL;
}

static void enum_list(const struct conf_key *k, char *buf, size_t cap)
{
	size_t n, len = 0;
	const char *const *names = enum_names(k, &n);

	buf[0] = '\0';
	for (size_t i = 0; i < n && len < cap; i++) {
		int w = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", names[i]);
		if (w < 0)
			break;
		len += (size_t)w;
	}
}

#define C(f) offsetof(struct fw_conf, f)
#define P(f) offsetof(struct fw_conf_port, f)

static const struct conf_section sections[] = {
	{"id", false, "ID layout, worker IDs and the generator's clock policy"},
	{"clock", false, "TSC calibration against the system clock and re-anchoring by slewing"},
	{"state", false, "the persisted high-water mark (restart safety)"},
	{"net", false, "the UDP service"},
	{"port", true,
	 "DPDK ports, [port0] .. [port3]: one RX and one TX queue per worker lcore on each"},
	{"stats", false, "the periodic stats line"},
	{"fleet", false,
	 "worker IDs claimed through ZooKeeper with time-fenced leases (README: Running a fleet); "
	 "one ensemble and one root per datacenter, [id] datacenter stays per node"},
	{"metrics", false, "the Prometheus /metrics endpoint (HTTP, its own thread)"},
	{"power", false, "(flakewire) what worker lcores do while no packets arrive"},
};

static const struct conf_key keys[] = {
	{"id", "epoch_ms", T_U64, 0, UINT64_C(4398046511103), "1767225600000",
	 "unix ms that encodes as timestamp 0 (default 2026-01-01T00:00:00Z)", C(id.epoch_ms)},
	{"id", "datacenter_bits", T_U32, 0, 10, "0", "bits of the datacenter field",
	 C(id.datacenter_bits)},
	{"id", "worker_bits", T_U32, 0, 16, "10", "bits of the worker field", C(id.worker_bits)},
	{"id", "sequence_bits", T_U32, 1, 22, "12", "bits of the per-ms sequence",
	 C(id.sequence_bits)},
	{"id", "datacenter", T_U32, 0, 1023, "0", "datacenter ID (< 2^datacenter_bits)",
	 C(id.datacenter)},
	{"id", "workers", T_U32_LIST, 0, 65535, "",
	 "worker IDs, one per worker lcore in lcore order, comma separated, no duplicates; "
	 "empty: worker_base + lcore index",
	 C(id.workers)},
	{"id", "worker_base", T_U32, 0, 65535, "0", "first worker ID when workers is empty",
	 C(id.worker_base)},
	{"id", "max_borrow_ms", T_U32, 0, 1000, "4",
	 "ms ahead of the clock a worker may borrow when its sequence is used up",
	 C(id.max_borrow_ms)},
	{"id", "max_backstep_ms", T_U32, 0, 3600000, "1000",
	 "larger backward clock steps are answered CLOCK_UNSAFE", C(id.max_backstep_ms)},
	{"id", "retry_us", T_U32, 1, 10000000, "1000",
	 "retry_after_us sent while the mark is not yet reserved", C(id.retry_us)},

	{"clock", "calibrate_ms", T_U32, 20, 60000, "100",
	 "calibration window of the tick source at start (refined at every re-anchor, so a "
	 "short one serves sooner after a restart at no lasting cost)",
	 C(clock.calibrate_ms)},
	{"clock", "reanchor_ms", T_U32, 10, 600000, "1000",
	 "re-anchor the calibration against the system clock this often", C(clock.reanchor_ms)},
	{"clock", "max_slew_ppm", T_U32, 1, 100000, "500",
	 "bound on the rate change used to remove an offset", C(clock.max_slew_ppm)},
	{"clock", "step_ms", T_U32, 1, 3600000, "100",
	 "offsets above this are steps: forward ones applied, backward ones reported",
	 C(clock.step_ms)},

	{"state", "file", T_STR, 1, FW_CONF_STR_LEN - 1, "/var/lib/flakewire/mark",
	 "high-water mark file (written atomically, fsynced)", C(state.file)},
	{"state", "lock_dir", T_STR, 1, FW_CONF_STR_LEN - 1, "/run/lock/flakewire",
	 "static worker IDs (no fleet) are locked here, one file per worker ID, so two "
	 "responders on this host cannot serve the same one (the state file is locked beside "
	 "it, as FILE.lock)",
	 C(state.lock_dir)},
	{"state", "lock_dir_mount", T_ENUM, 0, FW_ARRAY_SIZE(no_yes) - 1, "no",
	 "yes (the container images set it): static worker IDs (no fleet) need lock_dir to be "
	 "a mount point of its own, a host directory every container on the host mounts there "
	 "(checked in /proc/self/mountinfo), or the responder refuses to start: a directory "
	 "inside one container locks nothing for another",
	 C(state.lock_dir_mount)},
	{"state", "mark_ahead_ms", T_U32, 100, 600000, "300",
	 "reserve (persist) this far ahead of the clock; extended when half is used (a "
	 "mark write every mark_ahead_ms / 2, two fsyncs each); a restart after a crash "
	 "waits at most this long. Raise it where an fsync may take half of it",
	 C(state.mark_ahead_ms)},
	{"state", "start_policy", T_ENUM, 0, FW_ARRAY_SIZE(start_policies) - 1, "wait",
	 "system clock behind the persisted mark at start: wait = start and answer "
	 "CLOCK_UNSAFE/RETRY_AFTER until the clock passes the mark, then issue above it; "
	 "fail = exit when it is behind by more than mark_ahead_ms",
	 C(state.start_policy)},

	{"net", "udp_port", T_U32, 1, 65535, "4242", "UDP port of the ID service", C(net.udp_port)},
	{"net", "trusted", T_CIDRS, 0, FW_CONF_CIDRS_MAX, "127.0.0.0/8,::1/128",
	 "IPv4 and IPv6 prefixes whose replies may be larger than their requests, comma "
	 "separated; a martian source from the wire (loopback, unspecified, multicast, "
	 "broadcast, our own address) is dropped before this applies (flakewire), so the "
	 "default trusts only the host's own clients",
	 C(net.trusted)},
	{"net", "list_max", T_U32, 1, 181, "181", "most IDs in one LIST reply", C(net.list_max)},
	{"net", "ranges_max", T_U32, 1, 16, "16", "most ranges in one RANGE reply",
	 C(net.ranges_max)},
	{"net", "allow", T_CIDRS, 0, FW_CONF_CIDRS_MAX,
	 "127.0.0.0/8,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,100.64.0.0/10,::1/128,fc00::/7,"
	 "fe80::/10",
	 "(flakewire) IPv4 and IPv6 prefixes allowed to send anything to the responder, comma "
	 "separated; frames from every other source are dropped and counted (drop_source). "
	 "0.0.0.0/0 allows all IPv4, ::/0 all IPv6; a family with no prefix here is not "
	 "answered at all (neighbour discovery excepted). Trusted prefixes must be listed here "
	 "too",
	 C(net.allow)},
	{"net", "reflector_ports", T_U32_LIST, 0, 65535,
	 "0,7,17,19,53,123,137,161,389,1900,3702,5353,11211",
	 "(flakewire) UDP source ports of well-known reflectors (echo, qotd, chargen, DNS, "
	 "NTP, NetBIOS, SNMP, CLDAP, SSDP, WS-Discovery, mDNS, memcached): requests from "
	 "them are dropped and counted (drop_reflector_port), from every source",
	 C(net.reflector_ports)},
	{"net", "rate", T_U32, 0, 100000000, "0",
	 "(flakewire) requests per second answered per source prefix by the whole responder "
	 "(token bucket; each of N lcores enforces rate/N, so a source whose flows all reach "
	 "one lcore gets rate/N); 0: no rate limit. Trusted sources are exempt",
	 C(net.rate)},
	{"net", "rate_burst", T_U32, 1, 10000000, "100",
	 "(flakewire) requests a source prefix may send back to back (bucket depth; "
	 "burst/N per lcore)",
	 C(net.rate_burst)},
	{"net", "rate_prefix", T_U32, 0, 32, "32",
	 "(flakewire) sources are rate limited per prefix of this length (24: per /24)",
	 C(net.rate_prefix)},
	{"net", "rate_slip", T_U32, 0, 1000, "2",
	 "(flakewire) over the rate, every Nth request of a prefix is answered RETRY_AFTER "
	 "(24 bytes) instead of dropped, so a real client backs off; 0: drop all",
	 C(net.rate_slip)},
	{"net", "max_ids_per_request", T_U32, 1, 65535, "65535",
	 "(flakewire) most IDs one RANGE request is given (larger counts get this many, "
	 "PARTIAL); LIST is bounded by list_max",
	 C(net.max_ids_per_request)},
	{"net", "max_reply_bytes", T_U32, 24, 1472, "1472",
	 "(flakewire) largest UDP payload of any reply, trusted sources included; replies "
	 "to other sources are also never larger than their request",
	 C(net.max_reply_bytes)},

	{"port", "device", T_STR, 1, FW_CONF_STR_LEN - 1, "net_tap0,iface=fw0",
	 "PCI address (0000:01:00.0) or vdev devargs (net_tap0,iface=fw0, net_memif0,..., "
	 "net_af_xdp0,iface=eth1, net_ring0); a net_af_xdp string is checked and gets "
	 "flakewire's XDP program as with mode = af_xdp",
	 P(device)},
	{"port", "mode", T_ENUM, 0, FW_ARRAY_SIZE(port_modes) - 1, "dpdk",
	 "dpdk = DPDK owns `device`; af_xdp = share the kernel interface `iface` through "
	 "net_af_xdp: flakewire builds the devargs (queue_count = worker lcores), loads its XDP "
	 "program, which steers only [net] udp_port to DPDK, and answers with the interface's "
	 "own MAC and IPv4 address (`address` unused); ARP, ICMP and the rest stay with the "
	 "kernel",
	 P(mode)},
	{"port", "iface", T_STR, 0, 15, "", "af_xdp: kernel interface name (eth0)", P(iface)},
	{"port", "start_queue", T_U32, 0, 63, "0",
	 "af_xdp: first receive queue of the interface; worker i uses start_queue + i",
	 P(start_queue)},
	{"port", "xdp_prog", T_STR, 0, FW_CONF_STR_LEN - 1, "",
	 "af_xdp: XDP object to load; empty: flakewire.bpf.o built with flakewire (the build "
	 "tree's when run from it, the installed one otherwise)",
	 P(xdp_prog)},
	{"port", "address", T_IPV4, 0, 0, "10.77.0.2", "IPv4 address of the responder on this port",
	 P(address)},
	{"port", "address6", T_IPV6S, 0, FW_CONF_ADDR6_MAX, "",
	 "IPv6 addresses of the responder on this port, comma separated (2001:db8::2); "
	 "empty: no IPv6. flakewire answers neighbour discovery, ICMPv6 echo and the ID port "
	 "on each (af_xdp: unused, the interface's own global addresses are taken)",
	 P(address6)},
	{"port", "rx_desc", T_U32, 64, 4096, "512", "RX descriptors per queue", P(rx_desc)},
	{"port", "tx_desc", T_U32, 64, 4096, "512", "TX descriptors per queue", P(tx_desc)},

	{"net", "rate_prefix6", T_U32, 0, 128, "64",
	 "(flakewire) IPv6 sources are rate limited per prefix of this length (64: per /64, "
	 "56: per /56); one customer holds a whole /64 or more, so per address is useless",
	 C(net.rate_prefix6)},

	{"stats", "interval_s", T_U32, 0, 3600, "1", "print a stats line this often (0: off)",
	 C(stats.interval_s)},

	/* issue 10: the fleet (lib/fleet) */
	{"clock", "backstep", T_ENUM, 0, FW_ARRAY_SIZE(backsteps) - 1, "slew",
	 "system clock stepped back beyond step_ms: slew = keep issuing from flakewire's own "
	 "clock and slew the offset away (IDs run ahead of the system clock meanwhile); "
	 "new_worker = (fleet only) retire each worker's ID at the last ms it issued and claim "
	 "a fresh one, so IDs follow the system clock again at once",
	 C(clock.backstep)},
	{"fleet", "zookeeper", T_STR, 0, FW_CONF_STR_LEN - 1, "",
	 "ZooKeeper connect string (host:port,host:port,...); empty: no fleet, worker IDs come "
	 "from [id] workers / worker_base",
	 C(fleet.zookeeper)},
	{"fleet", "etcd", T_STR, 0, FW_CONF_STR_LEN - 1, "",
	 "etcd endpoints (http://host:2379,https://host2:2379,...), the registry instead of "
	 "ZooKeeper (set one of zookeeper and etcd); empty: not etcd",
	 C(fleet.etcd)},
	{"fleet", "etcd_ca_file", T_STR, 0, FW_CONF_STR_LEN - 1, "",
	 "etcd: CA bundle (PEM) that signed the https endpoints' certificates; empty: the "
	 "system's CAs",
	 C(fleet.etcd_ca_file)},
	{"fleet", "etcd_cert_file", T_STR, 0, FW_CONF_STR_LEN - 1, "",
	 "etcd: client certificate (PEM) for client-cert authentication, with etcd_key_file",
	 C(fleet.etcd_cert_file)},
	{"fleet", "etcd_key_file", T_STR, 0, FW_CONF_STR_LEN - 1, "",
	 "etcd: the client certificate's private key (PEM)", C(fleet.etcd_key_file)},
	{"fleet", "etcd_user", T_STR, 0, 127, "",
	 "etcd: user name for etcd's authentication, with etcd_password_file; empty: none",
	 C(fleet.etcd_user)},
	{"fleet", "etcd_password_file", T_STR, 0, FW_CONF_STR_LEN - 1, "",
	 "etcd: file holding etcd_user's password (its first line), kept out of the config "
	 "file; 0600 owned by this user, or 0640 owned by root",
	 C(fleet.etcd_password_file)},
	{"fleet", "etcd_plain_password", T_ENUM, 0, FW_ARRAY_SIZE(no_yes) - 1, "no",
	 "etcd: yes allows etcd_user's password over plain http:// endpoints, where it crosses "
	 "the network in clear (a loopback or otherwise trusted network only); no refuses it: "
	 "use https:// endpoints",
	 C(fleet.etcd_plain_password)},
	{"fleet", "etcd_proxy", T_STR, 0, FW_CONF_STR_LEN - 1, "",
	 "etcd: the HTTP(S) proxy to reach the endpoints through (a libcurl proxy URL); empty: "
	 "none, whatever http_proxy or HTTPS_PROXY say in the environment",
	 C(fleet.etcd_proxy)},
	{"fleet", "zookeeper_auth_file", T_STR, 0, FW_CONF_STR_LEN - 1, "",
	 "ZooKeeper: file holding the fleet's digest credentials USER:PASSWORD (its first line; "
	 "0600 owned by this user, or 0640 owned by root); the fleet's znodes are then created "
	 "writable by that principal only, readable by anyone; empty: open ACLs (anyone who "
	 "reaches the ensemble can change the records)",
	 C(fleet.zookeeper_auth_file)},
	{"fleet", "root", T_STR, 0, 199, "",
	 "the fleet's root (a znode in ZooKeeper, a key prefix in etcd), e.g. /flakewire/dc1: "
	 "made once by an operator with 'flakectl fleet init', never by a node; required with "
	 "[fleet] zookeeper or etcd (no default: a node on a root nobody made refuses to start)",
	 C(fleet.root)},
	{"fleet", "static", T_ENUM, 0, FW_ARRAY_SIZE(no_yes) - 1, "no",
	 "yes: a static node beside a fleet: its worker IDs come from [id] (workers or "
	 "worker_base), nothing is claimed, and at start it checks in the store ([fleet] "
	 "zookeeper or etcd) that [fleet] root serves [id] datacenter and reserves each of its "
	 "worker IDs ('flakectl fleet init --reserve'), and refuses to start otherwise",
	 C(fleet.static_node)},
	{"fleet", "identity", T_STR, 0, 127, "",
	 "this node's name in the fleet, unique and stable across restarts (it names the node, it "
	 "proves nothing: a restart takes back only what its own state proves it held); "
	 "env:VAR takes it from that environment variable (env:POD_NAME under Kubernetes, where "
	 "the host name is the node's under hostNetwork); empty: the host name",
	 C(fleet.identity)},
	{"fleet", "lease_ms", T_U32, 1000, 2147483647, "86400000",
	 "lease length: a node cut off from ZooKeeper keeps issuing this long after its last "
	 "renewal (default 24 h)",
	 C(fleet.lease_ms)},
	{"fleet", "renew_ms", T_U32, 100, 86400000, "60000",
	 "renew the leases this often (at most lease_ms / 2); failures retry with backoff and "
	 "jitter",
	 C(fleet.renew_ms)},
	{"fleet", "session_timeout_ms", T_U32, 1000, 60000, "10000", "ZooKeeper session timeout",
	 C(fleet.session_timeout_ms)},
	{"fleet", "start_wait_ms", T_U32, 0, 600000, "10000",
	 "at start, wait this long for ZooKeeper before starting from the cache file (or with "
	 "no worker ID: NO_LEASE)",
	 C(fleet.start_wait_ms)},
	{"fleet", "cache_file", T_STR, 0, FW_CONF_STR_LEN - 1, "auto",
	 "the claims and confirmed leases this node holds, rewritten at every change: a start "
	 "while ZooKeeper is down issues within them, a restart takes its worker IDs back "
	 "with them. One cache per state (a second process on it refuses to start); auto: "
	 "[state] file with .fleet appended (a first start without it reads the former default "
	 "/var/lib/flakewire/fleet if this state wrote it); empty: no cache",
	 C(fleet.cache_file)},
	{"fleet", "max_offset_ms", T_U32, 1, 3600000, "1000",
	 "clock offset to ZooKeeper's server time (checked at every renewal) above which it is "
	 "logged and flagged in telemetry",
	 C(fleet.max_offset_ms)},
	{"metrics", "listen", T_STR, 0, 63, "",
	 "serve Prometheus metrics on http://ADDR:PORT/metrics (127.0.0.1:9842, [::1]:9842); "
	 "empty: off. An address other than loopback exposes them to the network",
	 C(metrics.listen)},

	{"power", "idle", T_ENUM, 0, FW_ARRAY_SIZE(power_idles) - 1, "busy",
	 "busy = keep polling (lowest latency, a whole core per lcore); pause, monitor, "
	 "scale = DPDK's PMD power management after idle_polls empty polls (pause: TPAUSE, "
	 "else a PAUSE loop that still occupies the core; monitor: UMWAIT on the queue, needs "
	 "WAITPKG and driver support; scale: lower the core frequency, needs cpufreq); "
	 "interrupt = sleep in epoll on the queues' RX interrupts (drivers that have them: "
	 "net_tap, most NICs; not net_af_xdp in DPDK 22.11), freeing the core; sleep = "
	 "nanosleep sleep_us (any driver, net_af_xdp included), freeing the core at the cost "
	 "of up to sleep_us on the first packet after a quiet spell",
	 C(power.idle)},
	{"power", "idle_polls", T_U32, 1, 10000000, "512",
	 "empty polls of all its queues before an lcore pauses or sleeps (every mode but busy)",
	 C(power.idle_polls)},
	{"power", "pause_us", T_U32, 1, 100000, "1",
	 "pause: how long one pause lasts, in microseconds (DPDK's default 1)", C(power.pause_us)},
	{"power", "sleep_us", T_U32, 1, 100000, "200",
	 "sleep: how long one sleep lasts, in microseconds; the latency added to the first "
	 "request after a quiet spell, and the core is idle roughly sleep_us / (sleep_us + "
	 "a few us) of the time",
	 C(power.sleep_us)},
};

static const char *type_name(enum conf_type t)
{
	switch (t) {
	case T_U32:
	case T_U64:
		return "integer";
	case T_STR:
		return "string";
	case T_IPV4:
		return "IPv4 address";
	case T_U32_LIST:
		return "integer list";
	case T_CIDRS:
		return "IPv4/IPv6 prefix list";
	case T_IPV6S:
		return "IPv6 address list";
	case T_ENUM:
		return "one of";
	}
	return "?";
}

static int errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		int n = snprintf(err, errlen, "config: ");
		va_start(ap, fmt);
		if (n > 0 && (size_t)n < errlen)
			vsnprintf(err + n, errlen - n, fmt, ap);
		va_end(ap);
	}
	return FW_ECONF;
}

static const struct conf_section *find_section(const char *name, unsigned *index)
{
	for (size_t i = 0; i < FW_ARRAY_SIZE(sections); i++) {
		const struct conf_section *s = &sections[i];
		size_t n = strlen(s->name);

		if (!s->dpdk) {
			if (!strcmp(name, s->name))
				return s;
			continue;
		}
		/* "port" followed by a decimal index without leading zeros */
		if (strncmp(name, s->name, n) || !name[n])
			continue;
		if (name[n] == '0' && name[n + 1])
			continue;
		char *end;
		errno = 0;
		unsigned long v = strtoul(name + n, &end, 10);
		if (*end || errno || name[n] < '0' || name[n] > '9' || v >= FW_CONF_PORTS_MAX)
			continue;
		*index = (unsigned)v;
		return s;
	}
	return NULL;
}

static const struct conf_key *find_key(const char *section, const char *key)
{
	for (size_t i = 0; i < FW_ARRAY_SIZE(keys); i++)
		if (!strcmp(keys[i].section, section) && !strcmp(keys[i].key, key))
			return &keys[i];
	return NULL;
}

static void key_names(const char *section, char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < FW_ARRAY_SIZE(keys) && n < cap; i++) {
		if (strcmp(keys[i].section, section))
			continue;
		int w = snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", keys[i].key);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

static void section_names(unsigned flags, char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < FW_ARRAY_SIZE(sections) && n < cap; i++) {
		int w;

		if (sections[i].dpdk && (flags & FW_CONF_F_NO_PORTS))
			continue;
		if (sections[i].dpdk)
			w = snprintf(buf + n, cap - n, "%s%s0..%s%d", n ? ", " : "",
				     sections[i].name, sections[i].name, FW_CONF_PORTS_MAX - 1);
		else
			w = snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", sections[i].name);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

/* Strict decimal: digits only, no sign, no blanks. */
static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	*v = x;
	return 0;
}

static void trim(char *s)
{
	size_t n = strlen(s);
	size_t b = 0;

	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	while (s[b] == ' ' || s[b] == '\t')
		b++;
	memmove(s, s + b, n - b + 1);
}

static int parse_ipv4(const char *s, uint32_t *addr)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return -EINVAL;
	*addr = ntohl(a.s_addr);
	return 0;
}

#define BAD(fmt, ...) errf(err, errlen, "[%s] %s = %s: " fmt, secname, k->key, value, ##__VA_ARGS__)

static int set_value(void *base, const struct conf_key *k, const char *secname, const char *value,
		     char *err, size_t errlen)
{
	void *p = (char *)base + k->off;
	uint64_t v;
	int rc;

	switch (k->type) {
	case T_U32:
	case T_U64:
		rc = parse_u64(value, &v);
		if (rc == -EINVAL)
			return BAD("not a number (%" PRIu64 "-%" PRIu64 ")", k->min, k->max);
		if (rc || v < k->min || v > k->max)
			return BAD("out of range (%" PRIu64 "-%" PRIu64 ")", k->min, k->max);
		if (k->type == T_U32)
			*(uint32_t *)p = (uint32_t)v;
		else
			*(uint64_t *)p = v;
		return 0;
	case T_STR:
		if (strlen(value) < k->min || strlen(value) > k->max)
			return BAD("length out of range (%" PRIu64 "-%" PRIu64 " characters)",
				   k->min, k->max);
		snprintf(p, FW_CONF_STR_LEN, "%s", value);
		return 0;
	case T_IPV4:
		if (parse_ipv4(value, p))
			return BAD("not an IPv4 address (a.b.c.d)");
		return 0;
	case T_ENUM: {
		size_t n;
		const char *const *names = enum_names(k, &n);
		char list[128];

		for (size_t i = 0; i < n; i++) {
			if (!strcmp(value, names[i])) {
				*(uint32_t *)p = (uint32_t)i;
				return 0;
			}
		}
		enum_list(k, list, sizeof(list));
		return BAD("not one of (%s)", list);
	}
	case T_U32_LIST:
	case T_CIDRS:
	case T_IPV6S:
		break;
	}

	/* Comma lists: parse into a copy, commit when all of it is valid. */
	char buf[FW_CONF_STR_LEN];
	struct fw_conf_u32_list list = {0};
	struct fw_conf_cidrs cidrs = {0};
	struct fw_conf_addr6s a6s = {0};

	if (strlen(value) >= sizeof(buf))
		return BAD("too long");
	snprintf(buf, sizeof(buf), "%s", value);
	trim(buf);
	char *save = NULL;
	for (char *tok = buf[0] ? strtok_r(buf, ",", &save) : NULL; tok;
	     tok = strtok_r(NULL, ",", &save)) {
		trim(tok);
		if (k->type == T_U32_LIST) {
			rc = parse_u64(tok, &v);
			if (rc == -EINVAL)
				return BAD("'%s' is not a number (%" PRIu64 "-%" PRIu64 ")", tok,
					   k->min, k->max);
			if (rc || v < k->min || v > k->max)
				return BAD("%s out of range (%" PRIu64 "-%" PRIu64 ")", tok, k->min,
					   k->max);
			for (uint32_t i = 0; i < list.n; i++)
				if (list.v[i] == v)
					return BAD("duplicate %s", tok);
			if (list.n == FW_CONF_LIST_MAX)
				return BAD("more than %d entries", FW_CONF_LIST_MAX);
			list.v[list.n++] = (uint32_t)v;
			continue;
		}
		if (k->type == T_IPV6S) {
			struct in6_addr a;
			if (inet_pton(AF_INET6, tok, &a) != 1)
				return BAD("'%s' is not an IPv6 address (2001:db8::2)", tok);
			if (IN6_IS_ADDR_UNSPECIFIED(&a) || IN6_IS_ADDR_MULTICAST(&a) ||
			    IN6_IS_ADDR_LOOPBACK(&a) || IN6_IS_ADDR_V4MAPPED(&a))
				return BAD("'%s' is not a unicast address of an interface", tok);
			for (uint32_t i = 0; i < a6s.n; i++)
				if (!memcmp(a6s.a[i], &a, 16))
					return BAD("duplicate %s", tok);
			if (a6s.n == k->max)
				return BAD("more than %" PRIu64 " addresses", k->max);
			memcpy(a6s.a[a6s.n++], &a, 16);
			continue;
		}
		char *slash = strchr(tok, '/');
		uint64_t bits = 32;
		uint32_t addr;
		if (strchr(tok, ':')) {
			struct in6_addr a;
			bits = 128;
			if (slash) {
				*slash = '\0';
				if (parse_u64(slash + 1, &bits) || bits > 128)
					return BAD("bad prefix length in '%s/%s' (0-128)", tok,
						   slash + 1);
			}
			if (inet_pton(AF_INET6, tok, &a) != 1)
				return BAD("'%s' is not an IPv6 address (2001:db8::[/len])", tok);
			if (cidrs.n6 == FW_CONF_CIDRS_MAX)
				return BAD("more than %d IPv6 prefixes", FW_CONF_CIDRS_MAX);
			uint64_t hi = 0, lo = 0;
			for (int i = 0; i < 8; i++) {
				hi = hi << 8 | a.s6_addr[i];
				lo = lo << 8 | a.s6_addr[8 + i];
			}
			uint64_t mhi = bits == 0    ? 0
				       : bits >= 64 ? ~UINT64_C(0)
						    : ~UINT64_C(0) << (64 - bits);
			uint64_t mlo = bits <= 64    ? 0
				       : bits == 128 ? ~UINT64_C(0)
						     : ~UINT64_C(0) << (128 - bits);
			cidrs.v6[cidrs.n6].hi = hi & mhi;
			cidrs.v6[cidrs.n6].lo = lo & mlo;
			cidrs.v6[cidrs.n6].mhi = mhi;
			cidrs.v6[cidrs.n6].mlo = mlo;
			cidrs.n6++;
			continue;
		}
		if (slash) {
			*slash = '\0';
			if (parse_u64(slash + 1, &bits) || bits > 32)
				return BAD("bad prefix length in '%s/%s' (0-32)", tok, slash + 1);
		}
		if (parse_ipv4(tok, &addr))
			return BAD("'%s' is not an IPv4 address (a.b.c.d[/len])", tok);
		if (cidrs.n == FW_CONF_CIDRS_MAX)
			return BAD("more than %d prefixes", FW_CONF_CIDRS_MAX);
		uint32_t mask = bits ? ~UINT32_C(0) << (32 - bits) : 0;
		cidrs.v[cidrs.n].addr = addr & mask;
		cidrs.v[cidrs.n].mask = mask;
		cidrs.n++;
	}
	if (k->type == T_U32_LIST)
		memcpy(p, &list, sizeof(list));
	else if (k->type == T_IPV6S)
		memcpy(p, &a6s, sizeof(a6s));
	else
		memcpy(p, &cidrs, sizeof(cidrs));
	return 0;
}

#undef BAD

static void *key_base(struct fw_conf *c, const struct conf_section *s, unsigned index)
{
	if (!s->dpdk)
		return c;
	if (index + 1 > c->n_ports)
		c->n_ports = index + 1;
	return &c->port[index];
}

FW_API void fw_conf_init(struct fw_conf *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < FW_ARRAY_SIZE(keys); i++) {
		const struct conf_key *k = &keys[i];
		int rc = 0;

		if (strcmp(k->section, "port")) {
			rc = set_value(c, k, k->section, k->def, NULL, 0);
		} else {
			for (unsigned p = 0; p < FW_CONF_PORTS_MAX; p++)
				rc |= set_value(&c->port[p], k, k->section, k->def, NULL, 0);
		}
		(void)rc; /* defaults are valid by construction (checked by the tests) */
	}
	c->n_ports = 1;
}

FW_API int fw_conf_set_kv(struct fw_conf *c, const char *section, const char *key,
			  const char *value, unsigned flags, char *err, size_t errlen)
{
	char names[512];
	unsigned index = 0;
	const struct conf_section *s = find_section(section, &index);

	if (!s) {
		section_names(flags, names, sizeof(names));
		return errf(err, errlen, "[%s]: unknown section (sections: %s)", section, names);
	}
	if (s->dpdk && (flags & FW_CONF_F_NO_PORTS))
		return 0;
	const struct conf_key *k = find_key(s->name, key);
	if (!k) {
		key_names(s->name, names, sizeof(names));
		return errf(err, errlen, "[%s] %s: unknown key (keys: %s)", section, key, names);
	}
	return set_value(key_base(c, s, index), k, section, value, err, errlen);
}

FW_API int fw_conf_set(struct fw_conf *c, const char *assignment, unsigned flags, char *err,
		       size_t errlen)
{
	char buf[3 * FW_CONF_STR_LEN];
	const char *dot, *eq;

	if (strlen(assignment) >= sizeof(buf))
		return errf(err, errlen, "--set %.40s...: too long", assignment);
	snprintf(buf, sizeof(buf), "%s", assignment);
	eq = strchr(buf, '=');
	dot = strchr(buf, '.');
	if (!eq || !dot || dot > eq)
		return errf(err, errlen, "--set %s: expected section.key=value", assignment);
	buf[dot - buf] = '\0';
	buf[eq - buf] = '\0';
	char *section = buf, *key = (char *)dot + 1, *value = (char *)eq + 1;
	trim(section);
	trim(key);
	trim(value);
	return fw_conf_set_kv(c, section, key, value, flags, err, errlen);
}

/* What the inih callback needs: the first error sticks, later callbacks are no-ops. */
struct load_ctx {
	struct fw_conf *c;
	const char *path;
	unsigned flags;
	char *err;
	size_t errlen;
	int rc;
	char section[FW_CONF_STR_LEN];
	char keys[64][FW_CONF_STR_LEN / 4]; /* keys seen in the current section */
	unsigned n_keys;
};

static int on_entry(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *l = user;
	char v[2 * FW_CONF_STR_LEN];

	if (l->rc)
		return 1; /* the first error is the one reported */
	if (strcmp(section, l->section)) {
		snprintf(l->section, sizeof(l->section), "%.*s", (int)sizeof(l->section) - 1,
			 section);
		l->n_keys = 0;
	}
	for (unsigned i = 0; i < l->n_keys; i++)
		if (!strcmp(l->keys[i], name)) {
			l->rc = errf(l->err, l->errlen, "[%s] %s: given twice", section, name);
			return 1;
		}
	if (l->n_keys < FW_ARRAY_SIZE(l->keys))
		snprintf(l->keys[l->n_keys++], sizeof(l->keys[0]), "%.*s",
			 (int)sizeof(l->keys[0]) - 1, name);
	/* '#' or ';' start a comment anywhere on a line, as on a line of its own */
	snprintf(v, sizeof(v), "%s", value);
	v[strcspn(v, "#;")] = '\0';
	trim(v);
	l->rc = fw_conf_set_kv(l->c, section, name, v, l->flags, l->err, l->errlen);
	return 1;
}

/*
 * The checks inih cannot make: a line that is neither [section] nor
 * key = value (inih would report only its number), a section given twice,
 * an unknown section and an empty [portN] (inih calls back only for keys).
 */
static int prescan(struct load_ctx *l)
{
	char line[2 * FW_CONF_STR_LEN], seen[FW_CONF_PORTS_MAX + 8][FW_CONF_STR_LEN / 4];
	unsigned n_seen = 0;
	FILE *f = fopen(l->path, "r");

	if (!f)
		return errf(l->err, l->errlen, "%s: %s", l->path, strerror(errno));
	for (int lineno = 1; fgets(line, sizeof(line), f); lineno++) {
		line[strcspn(line, "#;\r\n")] = '\0';
		trim(line);
		if (!line[0])
			continue;
		if (line[0] != '[') {
			if (strchr(line, '='))
				continue;
			fclose(f);
			return errf(l->err, l->errlen, "%s:%d: '%s': expected key = value", l->path,
				    lineno, line);
		}
		char *end = strchr(line, ']');
		if (!end || end[1]) {
			fclose(f);
			return errf(l->err, l->errlen, "%s:%d: '%s': expected [section]", l->path,
				    lineno, line);
		}
		*end = '\0';
		char *name = line + 1;
		trim(name);
		unsigned index = 0;
		const struct conf_section *s = find_section(name, &index);
		if (!s) {
			char names[512];
			section_names(l->flags, names, sizeof(names));
			fclose(f);
			return errf(l->err, l->errlen, "%s: [%s]: unknown section (sections: %s)",
				    l->path, name, names);
		}
		for (unsigned i = 0; i < n_seen; i++)
			if (!strcmp(seen[i], name)) {
				fclose(f);
				return errf(l->err, l->errlen, "%s: [%s]: section given twice",
					    l->path, name);
			}
		if (n_seen < FW_ARRAY_SIZE(seen))
			snprintf(seen[n_seen++], sizeof(seen[0]), "%.*s", (int)sizeof(seen[0]) - 1,
				 name);
		if (!(s->dpdk && (l->flags & FW_CONF_F_NO_PORTS)))
			key_base(l->c, s, index); /* an empty [portN] still declares the port */
	}
	fclose(f);
	return 0;
}

FW_API int fw_conf_load(struct fw_conf *c, const char *path, unsigned flags, char *err,
			size_t errlen)
{
	struct load_ctx *l = calloc(1, sizeof(*l));
	int rc;

	if (!l)
		return errf(err, errlen, "%s: out of memory", path);
	l->c = c;
	l->path = path;
	l->flags = flags;
	l->err = err;
	l->errlen = errlen;
	rc = prescan(l);
	if (!rc) {
		int line = ini_parse(path, on_entry, l);
		rc = l->rc;
		if (!rc && line < 0)
			rc = errf(err, errlen, "%s: %s", path, strerror(errno ? errno : EIO));
		else if (!rc && line > 0)
			rc = errf(err, errlen,
				  "%s:%d: cannot parse (expected [section] and key = value lines)",
				  path, line);
	}
	free(l);
	return rc;
}

FW_API bool fw_conf_fleet_store(const struct fw_conf *c)
{
	return c->fleet.zookeeper[0] || c->fleet.etcd[0];
}

FW_API bool fw_conf_fleet_on(const struct fw_conf *c)
{
	return fw_conf_fleet_store(c) && !c->fleet.static_node;
}

/* [fleet] etcd: URLs with a scheme etcd serves, and the options that go in pairs. */
static int etcd_check(const struct fw_conf *c, char *err, size_t errlen)
{
	if (strchr(c->fleet.etcd, '@') != NULL) /* never echoed: it holds a password */
		return errf(
			err, errlen,
			"[fleet] etcd: an endpoint holds user info (USER:PASSWORD@, not shown): "
			"give credentials in [fleet] etcd_user and etcd_password_file");
	for (const char *p = c->fleet.etcd; *p;) {
		size_t len = strcspn(p, ",");
		bool http = len > 7 && !strncmp(p, "http://", 7);
		bool https = len > 8 && !strncmp(p, "https://", 8);
		const char *host = p + (https ? 8 : 7);
		if ((!http && !https) || memchr(host, '/', len - (size_t)(host - p)) != NULL)
			return errf(err, errlen,
				    "[fleet] etcd = %s: '%.*s' is not http://HOST:PORT or "
				    "https://HOST:PORT (a comma-separated list of them)",
				    c->fleet.etcd, (int)len, p);
		p += len;
		if (*p == ',')
			p++;
	}
	if (!c->fleet.etcd_cert_file[0] != !c->fleet.etcd_key_file[0])
		return errf(err, errlen,
			    "[fleet] etcd_cert_file = %s, etcd_key_file = %s: set both or neither",
			    c->fleet.etcd_cert_file, c->fleet.etcd_key_file);
	if (!c->fleet.etcd_user[0] != !c->fleet.etcd_password_file[0])
		return errf(err, errlen,
			    "[fleet] etcd_user = %s, etcd_password_file = %s: set both or neither",
			    c->fleet.etcd_user, c->fleet.etcd_password_file);
	return 0;
}

FW_API int fw_conf_check(const struct fw_conf *c, unsigned flags, char *err, size_t errlen)
{
	uint32_t node = c->id.datacenter_bits + c->id.worker_bits;
	uint32_t time_bits = 63 - node - c->id.sequence_bits;

	if (node + c->id.sequence_bits > 63 - 32)
		return errf(err, errlen,
			    "[id] datacenter_bits + worker_bits + sequence_bits = %u: leaves %d "
			    "timestamp bits (at least 32)",
			    node + c->id.sequence_bits, (int)time_bits);
	if (c->id.datacenter >> c->id.datacenter_bits)
		return errf(err, errlen, "[id] datacenter = %u: out of range (0-%u)",
			    c->id.datacenter, (1u << c->id.datacenter_bits) - 1);
	for (uint32_t i = 0; i < c->id.workers.n; i++)
		if (c->id.workers.v[i] >> c->id.worker_bits)
			return errf(err, errlen, "[id] workers: %u out of range (0-%u)",
				    c->id.workers.v[i], (1u << c->id.worker_bits) - 1);
	if (c->id.worker_base >> c->id.worker_bits)
		return errf(err, errlen, "[id] worker_base = %u: out of range (0-%u)",
			    c->id.worker_base, (1u << c->id.worker_bits) - 1);
	if (c->fleet.etcd[0] && strchr(c->fleet.etcd, '@') != NULL)
		return etcd_check(c, err, errlen);
	if (c->fleet.zookeeper[0] && c->fleet.etcd[0])
		return errf(err, errlen,
			    "[fleet] zookeeper = %s and [fleet] etcd = %s: set one of them (the "
			    "fleet's registry)",
			    c->fleet.zookeeper, c->fleet.etcd);
	if (c->fleet.etcd[0]) {
		int rc = etcd_check(c, err, errlen);
		if (rc != 0)
			return rc;
	}
	if (fw_conf_fleet_store(c) && !c->fleet.root[0])
		return errf(err, errlen,
			    "[fleet] root: not set: a node with [fleet] %s needs the root its "
			    "operator made with 'flakectl fleet init' (e.g. /flakewire/dc1); there "
			    "is no default root",
			    c->fleet.zookeeper[0] ? "zookeeper" : "etcd");
	if (c->fleet.root[0] &&
	    (c->fleet.root[0] != '/' || strlen(c->fleet.root) < 2 ||
	     c->fleet.root[strlen(c->fleet.root) - 1] == '/' || strstr(c->fleet.root, "//")))
		return errf(err, errlen,
			    "[fleet] root = %s: not an absolute path without a trailing '/' (e.g. "
			    "/flakewire/dc1)",
			    c->fleet.root);
	if (c->fleet.static_node && !fw_conf_fleet_store(c))
		return errf(
			err, errlen,
			"[fleet] static = yes: needs [fleet] zookeeper or etcd (the store whose "
			"root reserves this node's worker IDs)");
	if (fw_conf_fleet_on(c) && c->id.workers.n)
		return errf(
			err, errlen,
			"[id] workers = ...: not with a fleet ([fleet] zookeeper or etcd): in a "
			"fleet worker IDs are claimed, never configured");
	if (fw_conf_fleet_on(c) && c->fleet.lease_ms < 2 * (uint64_t)c->fleet.renew_ms)
		return errf(err, errlen,
			    "[fleet] renew_ms = %u: out of range (100-%u, half of "
			    "lease_ms)",
			    c->fleet.renew_ms, c->fleet.lease_ms / 2);
	if (c->clock.backstep == FW_CONF_BACKSTEP_NEW_WORKER && !fw_conf_fleet_on(c))
		return errf(err, errlen,
			    "[clock] backstep = new_worker: needs a fleet ([fleet] zookeeper or "
			    "etcd)");
	if (flags & FW_CONF_F_NO_PORTS)
		return 0;
	for (uint32_t i = 0; i < c->n_ports; i++) {
		const struct fw_conf_port *pi = &c->port[i];
		bool xi = pi->mode == FW_CONF_PORT_AF_XDP;

		if (xi && !pi->iface[0])
			return errf(err, errlen, "[port%u] mode = af_xdp needs iface (e.g. eth0)",
				    i);
		for (uint32_t j = 0; j < i; j++) {
			const char *a = c->port[i].device, *b = c->port[j].device;
			size_t la = strcspn(a, ","), lb = strcspn(b, ",");
			bool xj = c->port[j].mode == FW_CONF_PORT_AF_XDP;
			if (xi && xj && !strcmp(pi->iface, c->port[j].iface))
				return errf(err, errlen,
					    "[port%u] iface = %s: same iface as [port%u]", i,
					    pi->iface, j);
			if (xi || xj)
				continue; /* af_xdp ports ignore device and address */
			if (la == lb && !strncmp(a, b, la))
				return errf(err, errlen,
					    "[port%u] device = %s: same device as [port%u]", i, a,
					    j);
			if (c->port[i].address == c->port[j].address)
				return errf(err, errlen,
					    "[port%u] address: same address as [port%u]", i, j);
			for (uint32_t x = 0; x < pi->address6.n; x++)
				for (uint32_t y = 0; y < c->port[j].address6.n; y++)
					if (!memcmp(pi->address6.a[x], c->port[j].address6.a[y],
						    16))
						return errf(err, errlen,
							    "[port%u] address6: an address of "
							    "[port%u]",
							    i, j);
		}
	}
	return 0;
}

FW_API int64_t fw_conf_worker(const struct fw_conf *c, uint32_t i)
{
	if (c->id.workers.n)
		return i < c->id.workers.n ? (int64_t)c->id.workers.v[i] : -1;
	return (int64_t)c->id.worker_base + i;
}

FW_API const char *fw_conf_port_mode_name(uint32_t m)
{
	return m < FW_ARRAY_SIZE(port_modes) ? port_modes[m] : "?";
}

FW_API const char *fw_conf_start_policy_name(uint32_t p)
{
	return p < FW_ARRAY_SIZE(start_policies) ? start_policies[p] : "?";
}

FW_API const char *fw_conf_power_idle_name(uint32_t i)
{
	return i < FW_ARRAY_SIZE(power_idles) ? power_idles[i] : "?";
}

/* snprintf-style appender */
struct out {
	char *buf;
	size_t cap;
	size_t len;
};

static void outf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	char *dst = o->len < o->cap ? o->buf + o->len : NULL;
	size_t room = o->len < o->cap ? o->cap - o->len : 0;

	va_start(ap, fmt);
	int n = vsnprintf(dst, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

static void range_text(const struct conf_key *k, char *buf, size_t cap)
{
	switch (k->type) {
	case T_U32:
	case T_U64:
		snprintf(buf, cap, "%s %" PRIu64 "-%" PRIu64, type_name(k->type), k->min, k->max);
		break;
	case T_U32_LIST:
		snprintf(buf, cap, "%s, each %" PRIu64 "-%" PRIu64 ", at most %d",
			 type_name(k->type), k->min, k->max, FW_CONF_LIST_MAX);
		break;
	case T_CIDRS:
		snprintf(buf, cap, "%s (a.b.c.d/len, 2001:db8::/len), at most %d per family",
			 type_name(k->type), FW_CONF_CIDRS_MAX);
		break;
	case T_IPV6S:
		snprintf(buf, cap, "%s, at most %" PRIu64, type_name(k->type), k->max);
		break;
	case T_ENUM: {
		char list[96];
		enum_list(k, list, sizeof(list));
		snprintf(buf, cap, "%s %s", type_name(k->type), list);
		break;
	}
	default:
		snprintf(buf, cap, "%s", type_name(k->type));
		break;
	}
}

/* Wraps @text at 80 columns, each line starting with @prefix. */
static void wrapped(struct out *o, const char *prefix, const char *text)
{
	size_t width = 80 - strlen(prefix);

	while (*text) {
		size_t n = strlen(text);
		if (n > width) {
			n = width;
			while (n && text[n] != ' ')
				n--;
			if (!n)
				n = width;
		}
		outf(o, "%s%.*s\n", prefix, (int)n, text);
		text += n;
		while (*text == ' ')
			text++;
	}
}

FW_API size_t fw_conf_sample(char *buf, size_t cap, unsigned flags)
{
	struct out o = {buf, cap, 0};
	char range[128];

	if (cap)
		buf[0] = '\0';
	outf(&o, "# flakewire configuration: every key with its default.\n"
		 "# Generated by `flakewire --print-config` from the table in lib/conf/conf.c;\n"
		 "# edit a copy. Override single keys with --set section.key=value.\n");
	for (size_t si = 0; si < FW_ARRAY_SIZE(sections); si++) {
		const struct conf_section *s = &sections[si];

		if (s->dpdk && (flags & FW_CONF_F_NO_PORTS))
			continue;
		outf(&o, "\n");
		wrapped(&o, "# ", s->help);
		outf(&o, "[%s%s]\n", s->name, s->dpdk ? "0" : "");
		for (size_t i = 0; i < FW_ARRAY_SIZE(keys); i++) {
			const struct conf_key *k = &keys[i];
			if (strcmp(k->section, s->name))
				continue;
			range_text(k, range, sizeof(range));
			wrapped(&o, "# ", k->help);
			outf(&o, "# (%s)\n", range);
			outf(&o, "%s =%s%s\n", k->key, k->def[0] ? " " : "", k->def);
		}
	}
	return o.len;
}

/* @k's value in @base as its INI text (the form set_value reads back). */
static void value_text(const void *base, const struct conf_key *k, char *buf, size_t cap)
{
	const void *p = (const char *)base + k->off;
	struct out o = {buf, cap, 0};
	if (cap)
		buf[0] = '\0';
	switch (k->type) {
	case T_U32:
		outf(&o, "%u", *(const uint32_t *)p);
		break;
	case T_U64:
		outf(&o, "%" PRIu64, *(const uint64_t *)p);
		break;
	case T_STR:
		outf(&o, "%s", (const char *)p);
		break;
	case T_IPV4: {
		uint32_t a = *(const uint32_t *)p;
		outf(&o, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
		break;
	}
	case T_ENUM: {
		size_t n;
		const char *const *names = enum_names(k, &n);
		uint32_t v = *(const uint32_t *)p;
		outf(&o, "%s", v < n ? names[v] : "?");
		break;
	}
	case T_U32_LIST: {
		const struct fw_conf_u32_list *l = p;
		for (uint32_t i = 0; i < l->n; i++)
			outf(&o, "%s%u", i ? "," : "", l->v[i]);
		break;
	}
	case T_CIDRS: {
		const struct fw_conf_cidrs *c = p;
		uint32_t k4 = 0;
		for (uint32_t i = 0; i < c->n; i++, k4++) {
			uint32_t a = c->v[i].addr, m = c->v[i].mask;
			outf(&o, "%s%u.%u.%u.%u/%d", k4 ? "," : "", a >> 24, (a >> 16) & 255,
			     (a >> 8) & 255, a & 255, __builtin_popcount(m));
		}
		for (uint32_t i = 0; i < c->n6; i++, k4++) {
			uint8_t b[16];
			char t[INET6_ADDRSTRLEN];
			for (int j = 0; j < 8; j++) {
				b[j] = (uint8_t)(c->v6[i].hi >> (56 - 8 * j));
				b[8 + j] = (uint8_t)(c->v6[i].lo >> (56 - 8 * j));
			}
			inet_ntop(AF_INET6, b, t, sizeof(t));
			outf(&o, "%s%s/%d", k4 ? "," : "", t,
			     __builtin_popcountll(c->v6[i].mhi) +
				     __builtin_popcountll(c->v6[i].mlo));
		}
		break;
	}
	case T_IPV6S: {
		const struct fw_conf_addr6s *a = p;
		for (uint32_t i = 0; i < a->n; i++) {
			char t[INET6_ADDRSTRLEN];
			inet_ntop(AF_INET6, a->a[i], t, sizeof(t));
			outf(&o, "%s%s", i ? "," : "", t);
		}
		break;
	}
	}
}

FW_API size_t fw_conf_effective(const struct fw_conf *c, char *buf, size_t cap, unsigned flags)
{
	struct out o = {buf, cap, 0};
	char range[128], value[2 * FW_CONF_STR_LEN];

	if (cap)
		buf[0] = '\0';
	outf(&o, "# flakewire configuration in effect: the defaults, then the file, then --set.\n"
		 "# The same text loads back as a configuration file.\n");
	for (size_t si = 0; si < FW_ARRAY_SIZE(sections); si++) {
		const struct conf_section *s = &sections[si];
		uint32_t n = s->dpdk ? (c->n_ports ? c->n_ports : 1) : 1;

		if (s->dpdk && (flags & FW_CONF_F_NO_PORTS))
			continue;
		for (uint32_t pi = 0; pi < n; pi++) {
			const void *base = s->dpdk ? (const void *)&c->port[pi] : (const void *)c;
			outf(&o, "\n");
			wrapped(&o, "# ", s->help);
			if (s->dpdk)
				outf(&o, "[%s%u]\n", s->name, pi);
			else
				outf(&o, "[%s]\n", s->name);
			for (size_t i = 0; i < FW_ARRAY_SIZE(keys); i++) {
				const struct conf_key *k = &keys[i];
				if (strcmp(k->section, s->name))
					continue;
				range_text(k, range, sizeof(range));
				value_text(base, k, value, sizeof(value));
				outf(&o, "# (%s)%s%s\n", range,
				     strcmp(value, k->def) ? "; default " : "",
				     strcmp(value, k->def) ? (k->def[0] ? k->def : "(empty)") : "");
				outf(&o, "%s =%s%s\n", k->key, value[0] ? " " : "", value);
			}
		}
	}
	return o.len;
}

FW_API int fw_conf_print(FILE *f, const struct fw_conf *c, unsigned flags)
{
	size_t len = c ? fw_conf_effective(c, NULL, 0, flags) : fw_conf_sample(NULL, 0, flags);
	char *text = malloc(len + 1);
	int rc = 0;

	if (text == NULL)
		return -ENOMEM;
	if (c)
		fw_conf_effective(c, text, len + 1, flags);
	else
		fw_conf_sample(text, len + 1, flags);
	if (fputs(text, f) == EOF || fflush(f) == EOF)
		rc = -EIO;
	free(text);
	return rc;
}

FW_API size_t fw_conf_help(char *buf, size_t cap, unsigned flags)
{
	struct out o = {buf, cap, 0};
	char range[128];

	if (cap)
		buf[0] = '\0';
	for (size_t si = 0; si < FW_ARRAY_SIZE(sections); si++) {
		const struct conf_section *s = &sections[si];

		if (s->dpdk && (flags & FW_CONF_F_NO_PORTS))
			continue;
		if (s->dpdk)
			outf(&o, "  [%s0] .. [%s%d]: %s\n", s->name, s->name, FW_CONF_PORTS_MAX - 1,
			     s->help);
		else
			outf(&o, "  [%s]: %s\n", s->name, s->help);
		for (size_t i = 0; i < FW_ARRAY_SIZE(keys); i++) {
			const struct conf_key *k = &keys[i];
			if (strcmp(k->section, s->name))
				continue;
			range_text(k, range, sizeof(range));
			outf(&o, "    %s%s.%s = %s\n", s->name, s->dpdk ? "N" : "", k->key,
			     k->def[0] ? k->def : "(empty)");
			wrapped(&o, "        ", k->help);
			outf(&o, "        (%s)\n", range);
		}
	}
	return o.len;
}

FW_API const char *fw_conf_backstep_name(uint32_t b)
{
	return b < FW_ARRAY_SIZE(backsteps) ? backsteps[b] : "?";
}
