/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "flakectl.h"

void fc_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "flakectl %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

bool fc_is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

int fc_unknown_arg(const char *cmd, const char *arg)
{
	if (arg[0] == '-' && arg[1] == '-')
		fc_err(cmd, "unknown option '%s' (see flakectl %s --help)", arg, cmd);
	else
		fc_err(cmd, "unexpected argument '%s' (see flakectl %s --help)", arg, cmd);
	return FC_EXIT_USAGE;
}

static bool all_digits(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
	}
	return true;
}

enum fc_num fc_parse_u64(const char *s, uint64_t *v)
{
	uint64_t x = 0;

	if (*s == '\0')
		return FC_NUM_EMPTY;
	if (*s == '-')
		return all_digits(s + 1) ? FC_NUM_NEGATIVE : FC_NUM_NOT_DECIMAL;
	/* strtoull would accept spaces, signs, and wrap "-5" to 2^64-5. */
	if (!all_digits(s))
		return FC_NUM_NOT_DECIMAL;
	for (; *s; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (x > (UINT64_MAX - d) / 10)
			return FC_NUM_TOO_BIG;
		x = x * 10 + d;
	}
	*v = x;
	return FC_NUM_OK;
}

int fc_opt_value(int argc, char **argv, int *i, const char *name, const char **val)
{
	const char *arg = argv[*i];
	size_t len = strlen(name);

	if (strncmp(arg, name, len) != 0)
		return 0;
	if (arg[len] == '=') {
		*val = arg + len + 1;
		return 1;
	}
	if (arg[len] != '\0')
		return 0;
	if (*i + 1 >= argc) {
		fc_err(argv[0], "%s: missing value", name);
		return -1;
	}
	*val = argv[++*i];
	return 1;
}

int fc_opt_u64(int argc, char **argv, int *i, const char *name, uint64_t min, uint64_t max,
	       uint64_t *v)
{
	static const char *const why[] = {
		[FC_NUM_EMPTY] = "empty",
		[FC_NUM_NOT_DECIMAL] = "not a decimal number",
		[FC_NUM_NEGATIVE] = "negative",
		[FC_NUM_TOO_BIG] = "out of range",
	};
	const char *val;
	uint64_t x = 0;
	enum fc_num r;
	int m = fc_opt_value(argc, argv, i, name, &val);

	if (m <= 0)
		return m;
	r = fc_parse_u64(val, &x);
	if (r != FC_NUM_OK || x < min || x > max) {
		fc_err(argv[0], "%s %s: %s (allowed %" PRIu64 "-%" PRIu64 ")", name, val,
		       r == FC_NUM_OK ? "out of range" : why[r], min, max);
		return -1;
	}
	*v = x;
	return 1;
}
