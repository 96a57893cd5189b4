/* SPDX-License-Identifier: BSD-3-Clause */
/* flakeload's own command line: everything after "--". */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl.h"

#define DURATION_MAX_S 3600.0

void fl_options_usage(const char *prog)
{
	printf("Usage: %s [EAL options] -- --port DEVICE [options]\n"
	       "\n"
	       "DPDK load generator for flakewire: sends ID requests from simulated clients,\n"
	       "matches replies by tag, measures round trips and checks every ID received\n"
	       "(unique, strictly increasing per worker, time within a bound of our clock).\n"
	       "Exits 1 on any violation, 2 on a setup error, 3 when nothing was answered.\n"
	       "Example (memif, no hugepages, core 1):\n"
	       "  %s -l 1 --no-huge --no-pci --no-shconf -m 512 --file-prefix fl -- \\\n"
	       "      --port net_memif0,role=master,socket=/tmp/fw.sock,socket-abstract=no \\\n"
	       "      --dst-ip 10.0.0.2 --duration 5 --pad\n"
	       "\n"
	       "Options:\n"
	       "  --port DEVICE         DPDK device: vdev devargs (net_memif0,..., net_ring0,\n"
	       "                        net_tap0,iface=x) or a PCI address (required)\n"
	       "  --dst-ip A            responder IPv4 address (10.0.0.2)\n"
	       "  --src-ip-base A       first client address (10.0.0.10)\n"
	       "  --dst-ip6 A           send IPv6 requests to this responder address (the MAC is\n"
	       "                        still resolved by ARP for --dst-ip, or give --dst-mac)\n"
	       "  --src-ip6-base A      first IPv6 client address (fd00::10)\n"
	       "  --clients K           simulated clients: address base+k, UDP port\n"
	       "                        10000 + k %% 50000, used round robin (16)\n"
	       "  --dst-mac MAC         responder MAC; default: resolved by ARP\n"
	       "                        (with --expect-echo: 02:00:00:00:00:02)\n"
	       "  --udp-port P          responder UDP port (4242)\n"
	       "  --rate PPS            requests per second; 0: as fast as the window allows (0)\n"
	       "  --duration S          send for S seconds, at most 3600 (5)\n"
	       "  --requests N          stop after N requests; 0: duration only (0)\n"
	       "  --mix SPEC            weights, e.g. id:90,list:5,range:4,info:1 (id:1)\n"
	       "  --count N             IDs per LIST (1-181) and RANGE (1-65535) request (10)\n"
	       "  --pad                 pad requests to the reply size (needed when the\n"
	       "                        responder does not trust our addresses)\n"
	       "  --no-udp-cksum        send UDP checksum 0 (IPv4 allows it)\n"
	       "  --json FILE           also write the summary as JSON\n"
	       "  --expect-echo         the peer returns our requests unchanged but for the MACs\n"
	       "                        (dpdk-testpmd --forward-mode=macswap): count echoes\n"
	       "  --window N            most requests outstanding, power of 2 (4096)\n"
	       "  --timeout-ms MS       an outstanding request this old has timed out (100)\n"
	       "  --time-bound-ms MS    IDs must decode within MS of our clock (1000)\n"
	       "  --max-intervals N     memory cap of the uniqueness check, 16 bytes each;\n"
	       "                        IDs arriving consecutively per worker share one (8388608)\n"
	       "  --layout D/W/S        datacenter/worker/sequence bits when the responder\n"
	       "                        does not answer INFO (0/10/12)\n"
	       "  --epoch-ms MS         epoch for --layout (1767225600000)\n"
	       "  --link-wait S         wait for the link and a first answer (10)\n"
	       "  --linger S            after the summary (and --json) is written, keep the\n"
	       "                        port up for at most S seconds, until SIGINT/SIGTERM:\n"
	       "                        the peer under test is stopped first (0)\n"
	       "  --quiet               no progress lines\n"
	       "  -h, --help            this text\n",
	       prog, prog);
}

static int parse_u64(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;

	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max) {
		fprintf(stderr, "flakeload: %s '%s': expected an integer %llu-%llu\n", name, s,
			(unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_ip(const char *name, const char *s, uint32_t *out)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1) {
		fprintf(stderr, "flakeload: %s '%s': expected an IPv4 address\n", name, s);
		return -1;
	}
	*out = ntohl(a.s_addr);
	return 0;
}

static int parse_mix(const char *s, uint32_t mix[FL_MAX_MIX])
{
	static const char *const names[FL_MAX_MIX] = {"id", "list", "range", "info"};
	char buf[256];
	char *save = NULL;
	uint32_t total = 0;

	if (strlen(s) >= sizeof(buf))
		goto bad;
	strcpy(buf, s);
	memset(mix, 0, sizeof(uint32_t) * FL_MAX_MIX);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(t, ':');
		uint64_t w;
		int i;

		if (!colon)
			goto bad;
		*colon = '\0';
		for (i = 0; i < FL_MAX_MIX; i++)
			if (!strcmp(t, names[i]))
				break;
		if (i == FL_MAX_MIX || parse_u64("--mix weight", colon + 1, 0, FL_MIX_TABLE, &w))
			goto bad;
		mix[i] = (uint32_t)w;
		total += (uint32_t)w;
	}
	if (total == 0 || total > FL_MIX_TABLE)
		goto bad;
	return 0;
bad:
	fprintf(stderr,
		"flakeload: --mix '%s': expected op:weight,... with op id, list, range or info "
		"and weights adding up to 1-%d\n",
		s, FL_MIX_TABLE);
	return -1;
}

static int parse_layout(const char *s, struct fl_opts *o)
{
	unsigned d, w, q;
	char extra;

	if (sscanf(s, "%u/%u/%u%c", &d, &w, &q, &extra) != 3 ||
	    fw_layout_init(&o->layout, o->layout.epoch_ms, d, w, q, 0)) {
		fprintf(stderr,
			"flakeload: --layout '%s': expected datacenter/worker/sequence bits, "
			"e.g. 0/10/12, with sequence 1-22, datacenter 0-10, worker 0-16\n",
			s);
		return -1;
	}
	return 0;
}

static void opts_default(struct fl_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->dst_ip = 0x0a000002;      /* 10.0.0.2 */
	o->src_ip_base = 0x0a00000a; /* 10.0.0.10 */
	inet_pton(AF_INET6, "fd00::10", o->src_ip6_base);
	o->clients = 16;
	o->udp_port = FW_WIRE_DEFAULT_PORT;
	o->duration_s = 5;
	o->mix[0] = 1;
	o->count = 10;
	o->udp_cksum = true;
	o->window = 4096;
	o->timeout_ms = 100;
	o->time_bound_ms = 1000;
	o->max_intervals = 8u << 20;
	o->link_wait_s = 10;
	fw_layout_default(&o->layout);
}

enum {
	O_PORT = 256,
	O_DST_IP,
	O_SRC_IP,
	O_CLIENTS,
	O_DST_MAC,
	O_UDP_PORT,
	O_RATE,
	O_DURATION,
	O_REQUESTS,
	O_MIX,
	O_COUNT,
	O_PAD,
	O_NO_CKSUM,
	O_JSON,
	O_ECHO,
	O_WINDOW,
	O_TIMEOUT,
	O_TIME_BOUND,
	O_MAX_IVAL,
	O_LAYOUT,
	O_EPOCH,
	O_LINK_WAIT,
	O_LINGER,
	O_QUIET,
	O_DST_IP6,
	O_SRC_IP6,
};

static int parse_one(int opt, const char *arg, struct fl_opts *o, const char **layout)
{
	uint64_t v;
	char *end;

	switch (opt) {
	case O_PORT:
		o->device = arg;
		return 0;
	case O_DST_IP:
		return parse_ip("--dst-ip", arg, &o->dst_ip);
	case O_DST_IP6:
	case O_SRC_IP6: {
		uint8_t *a6 = opt == O_DST_IP6 ? o->dst_ip6 : o->src_ip6_base;
		if (inet_pton(AF_INET6, arg, a6) != 1) {
			fprintf(stderr, "flakeload: %s '%s': expected an IPv6 address\n",
				opt == O_DST_IP6 ? "--dst-ip6" : "--src-ip6-base", arg);
			return -1;
		}
		o->ipv6 |= opt == O_DST_IP6;
		return 0;
	}
	case O_SRC_IP:
		return parse_ip("--src-ip-base", arg, &o->src_ip_base);
	case O_CLIENTS:
		if (parse_u64("--clients", arg, 1, 1u << 20, &v))
			return -1;
		o->clients = (uint32_t)v;
		return 0;
	case O_DST_MAC:
		if (rte_ether_unformat_addr(arg, &o->dst_mac)) {
			fprintf(stderr, "flakeload: --dst-mac '%s': expected xx:xx:xx:xx:xx:xx\n",
				arg);
			return -1;
		}
		o->have_dst_mac = true;
		return 0;
	case O_UDP_PORT:
		if (parse_u64("--udp-port", arg, 1, 65535, &v))
			return -1;
		o->udp_port = (uint16_t)v;
		return 0;
	case O_RATE:
		return parse_u64("--rate", arg, 0, 1000000000, &o->rate);
	case O_DURATION:
		o->duration_s = strtod(arg, &end);
		if (end == arg || *end || !(o->duration_s > 0 && o->duration_s <= DURATION_MAX_S)) {
			fprintf(stderr, "flakeload: --duration '%s': expected seconds, 0-%.0f\n",
				arg, DURATION_MAX_S);
			return -1;
		}
		return 0;
	case O_REQUESTS:
		return parse_u64("--requests", arg, 0, UINT64_MAX, &o->requests);
	case O_MIX:
		return parse_mix(arg, o->mix);
	case O_COUNT:
		if (parse_u64("--count", arg, 1, FW_WIRE_RANGE_IDS_MAX, &v))
			return -1;
		o->count = (uint16_t)v;
		return 0;
	case O_PAD:
		o->pad = true;
		return 0;
	case O_NO_CKSUM:
		o->udp_cksum = false;
		return 0;
	case O_JSON:
		o->json = arg;
		return 0;
	case O_ECHO:
		o->expect_echo = true;
		return 0;
	case O_WINDOW:
		if (parse_u64("--window", arg, 1, 1u << 22, &v))
			return -1;
		if (v & (v - 1)) {
			fprintf(stderr, "flakeload: --window '%s': expected a power of 2\n", arg);
			return -1;
		}
		o->window = (uint32_t)v;
		return 0;
	case O_TIMEOUT:
		if (parse_u64("--timeout-ms", arg, 1, 60000, &v))
			return -1;
		o->timeout_ms = (uint32_t)v;
		return 0;
	case O_TIME_BOUND:
		if (parse_u64("--time-bound-ms", arg, 0, 86400000, &v))
			return -1;
		o->time_bound_ms = (uint32_t)v;
		return 0;
	case O_MAX_IVAL:
		return parse_u64("--max-intervals", arg, 1024, 1ull << 32, &o->max_intervals);
	case O_LAYOUT:
		*layout = arg;
		return 0;
	case O_EPOCH:
		return parse_u64("--epoch-ms", arg, 0, (1ull << 42) - 1, &o->layout.epoch_ms);
	case O_LINK_WAIT:
		o->link_wait_s = strtod(arg, &end);
		if (end == arg || *end || !(o->link_wait_s > 0 && o->link_wait_s <= 600)) {
			fprintf(stderr, "flakeload: --link-wait '%s': expected seconds, 0-600\n",
				arg);
			return -1;
		}
		return 0;
	case O_LINGER:
		o->linger_s = strtod(arg, &end);
		if (end == arg || *end || !(o->linger_s >= 0 && o->linger_s <= 600)) {
			fprintf(stderr, "flakeload: --linger '%s': expected seconds, 0-600\n", arg);
			return -1;
		}
		return 0;
	case O_QUIET:
		o->quiet = true;
		return 0;
	default:
		return -1;
	}
}

int fl_options_parse(int argc, char **argv, struct fl_opts *o)
{
	static const struct option longopts[] = {
		{"port", required_argument, NULL, O_PORT},
		{"dst-ip", required_argument, NULL, O_DST_IP},
		{"dst-ip6", required_argument, NULL, O_DST_IP6},
		{"src-ip6-base", required_argument, NULL, O_SRC_IP6},
		{"src-ip-base", required_argument, NULL, O_SRC_IP},
		{"clients", required_argument, NULL, O_CLIENTS},
		{"dst-mac", required_argument, NULL, O_DST_MAC},
		{"udp-port", required_argument, NULL, O_UDP_PORT},
		{"rate", required_argument, NULL, O_RATE},
		{"duration", required_argument, NULL, O_DURATION},
		{"requests", required_argument, NULL, O_REQUESTS},
		{"mix", required_argument, NULL, O_MIX},
		{"count", required_argument, NULL, O_COUNT},
		{"pad", no_argument, NULL, O_PAD},
		{"no-udp-cksum", no_argument, NULL, O_NO_CKSUM},
		{"json", required_argument, NULL, O_JSON},
		{"expect-echo", no_argument, NULL, O_ECHO},
		{"window", required_argument, NULL, O_WINDOW},
		{"timeout-ms", required_argument, NULL, O_TIMEOUT},
		{"time-bound-ms", required_argument, NULL, O_TIME_BOUND},
		{"max-intervals", required_argument, NULL, O_MAX_IVAL},
		{"layout", required_argument, NULL, O_LAYOUT},
		{"epoch-ms", required_argument, NULL, O_EPOCH},
		{"link-wait", required_argument, NULL, O_LINK_WAIT},
		{"linger", required_argument, NULL, O_LINGER},
		{"quiet", no_argument, NULL, O_QUIET},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *layout = NULL;
	int opt;

	opts_default(o);
	optind = 1;
	opterr = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 'h') {
			fl_options_usage(argv[0]);
			return 1;
		}
		if (opt == '?' || parse_one(opt, optarg, o, &layout))
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "flakeload: unexpected argument '%s' (see --help)\n", argv[optind]);
		return -1;
	}
	/* after --epoch-ms, whatever the order */
	if (layout && parse_layout(layout, o))
		return -1;
	if (!o->device) {
		fprintf(stderr, "flakeload: --port DEVICE is required (see --help)\n");
		return -1;
	}
	if (o->mix[1] && o->count > FW_WIRE_LIST_MAX) {
		fprintf(stderr, "flakeload: --count %u: LIST requests take 1-%d IDs\n", o->count,
			FW_WIRE_LIST_MAX);
		return -1;
	}
	if (o->expect_echo && !o->have_dst_mac) {
		rte_ether_unformat_addr("02:00:00:00:00:02", &o->dst_mac);
		o->have_dst_mac = true;
	}
	return 0;
}
