/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "flakectl.h"
#include "fw_err.h"
#include "fw_layout.h"
#include "fw_mark.h"
#include "fw_state_lock.h"
#include "fw_time.h"

/* A mark further ahead than this stalls a responder until then: ask for --force. */
#define MARK_AHEAD_MAX_MS (24ull * 3600 * 1000)
/* Year 9999: beyond it ISO 8601 needs more digits and no layout reaches it. */
#define MARK_MS_MAX       253402300799999ull

static void mark_help(FILE *f)
{
	fprintf(f,
		"usage: flakectl mark FILE [--set UNIX_MS|now] [--force]\n"
		"\n"
		"Prints the high-water mark persisted in a responder's state file\n"
		"(state.file): unix ms and ISO 8601 time up to which IDs may have been\n"
		"issued. With --set, writes a new mark (atomically), e.g. to recover from a\n"
		"corrupt state file. Refused while a responder holds the state (FILE.lock):\n"
		"it would rewrite the file at its stop.\n"
		"\n"
		"  --set UNIX_MS|now     write this mark (1-%llu, or the system clock)\n"
		"  --force               allow lowering a readable mark (IDs at or below the\n"
		"                        old mark may then be issued twice) or a mark more\n"
		"                        than a day ahead of the system clock\n",
		MARK_MS_MAX);
}

static void print_mark(const char *path, uint64_t ms)
{
	char iso[FW_ISO8601_LEN];

	printf("%s: unix_ms %" PRIu64 "  %s\n", path, ms, fw_format_iso8601(ms, iso));
}

static int mark_read(const char *cmd, const char *path)
{
	uint64_t ms;
	int rc = fw_mark_read(path, &ms);

	if (rc == -ENOENT) {
		fc_err(cmd, "%s: no such file (no mark yet)", path);
		return FC_EXIT_FAIL;
	}
	if (rc == FW_ESTATE_CORRUPT) {
		fc_err(cmd, "%s: %s (write a new mark with --set)", path, fw_strerror(rc));
		return FC_EXIT_FAIL;
	}
	if (rc < 0) {
		fc_err(cmd, "%s: %s", path, fw_strerror(rc));
		return FC_EXIT_FAIL;
	}
	print_mark(path, ms);
	return FC_EXIT_OK;
}

static int mark_set_locked(const char *cmd, const char *path, uint64_t ms, bool force, uint64_t now,
			   uint64_t *oldp);

static int mark_set(const char *cmd, const char *path, uint64_t ms, bool force)
{
	uint64_t old = 0, now = fw_wall_ms();
	char lerr[512];
	struct fw_state_lock *lock = NULL;
	/* a responder on this state would overwrite the new mark at its stop */
	int lrc = fw_state_lock_take(path, &lock, lerr, sizeof(lerr));
	if (lrc != 0) {
		fc_err(cmd, "%s%s", lerr, lrc == -EWOULDBLOCK ? "; the mark was not changed" : "");
		return FC_EXIT_FAIL;
	}
	int rc = mark_set_locked(cmd, path, ms, force, now, &old);
	fw_state_lock_free(lock);
	return rc;
}

static int mark_set_locked(const char *cmd, const char *path, uint64_t ms, bool force, uint64_t now,
			   uint64_t *oldp)
{
	char iso[FW_ISO8601_LEN], old_iso[FW_ISO8601_LEN];
	uint64_t old = 0;
	int rc = fw_mark_read(path, &old);
	*oldp = old;

	if (rc < 0 && rc != -ENOENT && rc != FW_ESTATE_CORRUPT) {
		fc_err(cmd, "%s: %s", path, fw_strerror(rc));
		return FC_EXIT_FAIL;
	}
	fw_format_iso8601(ms, iso);
	if (rc == 0 && ms < old && !force) {
		fc_err(cmd,
		       "--set %" PRIu64 ": below the current mark %" PRIu64 " (%s); "
		       "lowering it allows duplicate IDs (--force to do it anyway)",
		       ms, old, fw_format_iso8601(old, old_iso));
		return FC_EXIT_USAGE;
	}
	if (ms > now + MARK_AHEAD_MAX_MS && !force) {
		fc_err(cmd,
		       "--set %" PRIu64 ": %s is more than a day ahead of the system clock "
		       "(--force to do it anyway)",
		       ms, iso);
		return FC_EXIT_USAGE;
	}
	int w = fw_mark_write(path, ms);

	if (w < 0) {
		fc_err(cmd, "%s: %s", path, fw_strerror(w));
		return FC_EXIT_FAIL;
	}
	if (rc == 0)
		printf("%s: unix_ms %" PRIu64 "  %s  (was %" PRIu64 "  %s)\n", path, ms, iso, old,
		       fw_format_iso8601(old, old_iso));
	else
		printf("%s: unix_ms %" PRIu64 "  %s  (was %s)\n", path, ms, iso,
		       rc == -ENOENT ? "absent" : "corrupt");
	return FC_EXIT_OK;
}

int cmd_mark(int argc, char **argv)
{
	const char *cmd = argv[0], *path = NULL, *set = NULL;
	bool force = false, opts = true;
	uint64_t ms = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r = opts ? fc_opt_value(argc, argv, &i, "--set", &set) : 0;

		if (r < 0)
			return FC_EXIT_USAGE;
		if (r > 0)
			continue;
		if (opts && fc_is_help(a)) {
			mark_help(stdout);
			return FC_EXIT_OK;
		} else if (opts && !strcmp(a, "--force")) {
			force = true;
		} else if (opts && !strcmp(a, "--")) {
			opts = false;
		} else if ((opts && a[0] == '-' && a[1] != '\0') || path) {
			return fc_unknown_arg(cmd, a);
		} else {
			path = a;
		}
	}
	if (!path) {
		fc_err(cmd, "missing FILE (the responder's state.file)");
		return FC_EXIT_USAGE;
	}
	if (*path == '\0') {
		fc_err(cmd, "FILE: empty path");
		return FC_EXIT_USAGE;
	}
	if (!set) {
		if (force) {
			fc_err(cmd, "--force: only with --set");
			return FC_EXIT_USAGE;
		}
		return mark_read(cmd, path);
	}
	if (!strcmp(set, "now")) {
		ms = fw_wall_ms();
	} else {
		enum fc_num r = fc_parse_u64(set, &ms);

		if (r != FC_NUM_OK || ms < 1 || ms > MARK_MS_MAX) {
			fc_err(cmd, "--set %s: %s (allowed 1-%llu or 'now')", set,
			       r == FC_NUM_OK || r == FC_NUM_TOO_BIG ? "out of range"
			       : r == FC_NUM_EMPTY                   ? "empty"
			       : r == FC_NUM_NEGATIVE                ? "negative"
								     : "not a decimal number",
			       MARK_MS_MAX);
			return FC_EXIT_USAGE;
		}
	}
	return mark_set(cmd, path, ms, force);
}
