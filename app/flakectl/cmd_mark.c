/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flakectl.h"
#include "fw_conf.h"
#include "fw_err.h"
#include "fw_layout.h"
#include "fw_mark.h"
#include "fw_state_lock.h"
#include "fw_time.h"

/* A mark further ahead than this stalls a responder until then: ask for --force. */
#define MARK_AHEAD_MAX_MS (24ull * 3600 * 1000)
/* Year 9999: beyond it ISO 8601 needs more digits and no layout reaches it. */
#define MARK_MS_MAX       253402300799999ull
#define OVERRIDES_MAX     16

static void mark_help(FILE *f)
{
	fprintf(f,
		"usage: flakectl mark FILE\n"
		"       flakectl mark FILE --set UNIX_MS|now [--force] [LAYOUT]\n"
		"       flakectl mark FILE --convert LAYOUT\n"
		"\n"
		"Prints the high-water mark persisted in a responder's state file\n"
		"(state.file): unix ms and ISO 8601 time up to which IDs may have been\n"
		"issued, and the ID layout it fences. A responder refuses to start on a\n"
		"mark of another layout or epoch, and on a missing mark once one was\n"
		"written (FILE.written). Writing is refused while a responder holds the\n"
		"state (FILE.lock): it would rewrite the file at its stop.\n"
		"\n"
		"  --set UNIX_MS|now     write this mark (1-%llu, or the system clock), in\n"
		"                        the mark's own layout, LAYOUT's, or the default\n"
		"  --force               allow lowering a readable mark (IDs at or below the\n"
		"                        old mark may then be issued twice), a mark more than\n"
		"                        a day ahead of the system clock, and writing over a\n"
		"                        missing or corrupt mark (use a time above every ID\n"
		"                        the node may have issued: doc/runbook.md)\n"
		"  --convert             rewrite the mark for the layout LAYOUT: the new mark\n"
		"                        is the lowest whose IDs are all above every ID the\n"
		"                        old mark allowed in its layout\n"
		"\n"
		"LAYOUT, the [id] settings as the responders take them:\n"
		"  --config FILE         the responder's configuration (its [id] section)\n"
		"  --set id.KEY=VALUE    an [id] override (epoch_ms, datacenter_bits,\n"
		"                        worker_bits, sequence_bits, datacenter)\n",
		MARK_MS_MAX);
}

/* One line: scripts read the third word (the unix ms). */
static void print_mark(const char *path, const struct fw_mark *m)
{
	char iso[FW_ISO8601_LEN], l[FW_MARK_LAYOUT_LEN];

	printf("%s: unix_ms %" PRIu64 "  %s  (%s)\n", path, m->unix_ms,
	       fw_format_iso8601(m->unix_ms, iso),
	       m->format == 1 ? "format 1: no layout recorded, read as the responder's [id]"
			      : fw_mark_layout_format(&m->layout, l));
}

static int mark_read(const char *cmd, const char *path)
{
	struct fw_mark m;
	int rc = fw_mark_read_full(path, &m);

	if (rc == -ENOENT) {
		fc_err(cmd, "%s: no such file (%s)", path,
		       fw_mark_recorded(path) == 1
			       ? "a mark was written here before (" FW_MARK_RECORD_SUFFIX
				 " beside it): it is lost"
			       : "no mark yet");
		return FC_EXIT_FAIL;
	}
	if (rc == FW_ESTATE_CORRUPT) {
		fc_err(cmd, "%s: %s (write a new mark with --set ... --force)", path,
		       fw_strerror(rc));
		return FC_EXIT_FAIL;
	}
	if (rc < 0) {
		fc_err(cmd, "%s: %s", path, fw_strerror(rc));
		return FC_EXIT_FAIL;
	}
	print_mark(path, &m);
	return FC_EXIT_OK;
}

/* The layout options: a configuration file and [id] overrides. */
struct layout_opts {
	const char *config;
	const char *set[OVERRIDES_MAX];
	unsigned n_set;
};

/*
 * Builds the layout the options give, and the margin a lost mark's advice adds
 * to the clock: [state] mark_ahead_ms plus [clock] step_ms, as the responders'
 * own refusal computes it (their defaults without --config). Returns 0 or an
 * FC_EXIT_* (reported).
 */
static int layout_of(const char *cmd, const struct layout_opts *o, struct fw_mark_layout *out,
		     uint64_t *margin_ms)
{
	struct fw_conf *c = malloc(sizeof(*c));
	char err[512];
	int rc = 0;

	if (c == NULL) {
		fc_err(cmd, "out of memory");
		return FC_EXIT_FAIL;
	}
	fw_conf_init(c);
	if (o->config && fw_conf_load(c, o->config, FW_CONF_F_NO_PORTS, err, sizeof(err)) != 0)
		rc = FC_EXIT_USAGE;
	for (unsigned i = 0; rc == 0 && i < o->n_set; i++)
		if (fw_conf_set(c, o->set[i], FW_CONF_F_NO_PORTS, err, sizeof(err)) != 0)
			rc = FC_EXIT_USAGE;
	if (rc == 0 && fw_conf_check(c, FW_CONF_F_NO_PORTS, err, sizeof(err)) != 0)
		rc = FC_EXIT_USAGE;
	if (rc) {
		fc_err(cmd, "%s", err);
	} else {
		*out = (struct fw_mark_layout){.epoch_ms = c->id.epoch_ms,
					       .datacenter_bits = c->id.datacenter_bits,
					       .worker_bits = c->id.worker_bits,
					       .sequence_bits = c->id.sequence_bits,
					       .datacenter = c->id.datacenter};
		*margin_ms = (uint64_t)c->state.mark_ahead_ms + c->clock.step_ms;
	}
	free(c);
	return rc;
}

struct mark_req {
	const char *path;
	uint64_t ms;  /* --set */
	bool convert; /* --convert */
	bool force;
	bool layout_given;
	struct fw_mark_layout layout; /* the options', or the default */
	uint64_t margin_ms;           /* a lost mark's advice: the clock plus this */
};

static int mark_set_locked(const char *cmd, const struct mark_req *q)
{
	char iso[FW_ISO8601_LEN], old_iso[FW_ISO8601_LEN], l1[FW_MARK_LAYOUT_LEN];
	uint64_t now = fw_wall_ms();
	struct fw_mark old;
	int rc = fw_mark_read_full(q->path, &old);

	if (rc < 0 && rc != -ENOENT && rc != FW_ESTATE_CORRUPT) {
		fc_err(cmd, "%s: %s", q->path, fw_strerror(rc));
		return FC_EXIT_FAIL;
	}
	if (rc != 0 && !q->force) {
		uint64_t tmp = 0, advice = fw_mark_advice(q->path, now, q->margin_ms, &tmp);
		bool lost = rc == -ENOENT && fw_mark_recorded(q->path) == 1;
		fc_err(cmd,
		       "--set %" PRIu64 ": %s is %s: the IDs issued under it are unknown. Write "
		       "a mark at or above the newest one the node logged ('mark: reserved up "
		       "to M'), or else at least %" PRIu64 " (%s), with --force",
		       q->ms, q->path,
		       rc == FW_ESTATE_CORRUPT ? "corrupt"
		       : lost ? "missing, and " FW_MARK_RECORD_SUFFIX " beside it says a mark was "
				"written"
			      : "missing",
		       advice,
		       tmp && tmp >= now + q->margin_ms
			       ? "the leftover FILE.tmp"
			       : "the clock plus [state] mark_ahead_ms plus [clock] step_ms: add N "
				 "if the node logged 'clock: system clock is N ms behind'");
		return FC_EXIT_USAGE;
	}
	struct fw_mark_layout layout = q->layout;
	if (rc == 0 && old.format == 2 && !q->layout_given)
		layout = old.layout; /* --set keeps the mark's layout */
	if (rc == 0 && old.format == 2 && !fw_mark_layout_equal(&old.layout, &layout)) {
		fc_err(cmd,
		       "--set %" PRIu64 ": %s fences the layout %s, not the one given; "
		       "--convert rewrites a mark for another layout",
		       q->ms, q->path, fw_mark_layout_format(&old.layout, l1));
		return FC_EXIT_USAGE;
	}
	fw_format_iso8601(q->ms, iso);
	if (rc == 0 && q->ms < old.unix_ms && !q->force) {
		fc_err(cmd,
		       "--set %" PRIu64 ": below the current mark %" PRIu64 " (%s); "
		       "lowering it allows duplicate IDs (--force to do it anyway)",
		       q->ms, old.unix_ms, fw_format_iso8601(old.unix_ms, old_iso));
		return FC_EXIT_USAGE;
	}
	if (q->ms > now + MARK_AHEAD_MAX_MS && !q->force) {
		fc_err(cmd,
		       "--set %" PRIu64 ": %s is more than a day ahead of the system clock "
		       "(--force to do it anyway)",
		       q->ms, iso);
		return FC_EXIT_USAGE;
	}
	int w = fw_mark_write(q->path, q->ms, &layout);

	if (w < 0) {
		fc_err(cmd, "%s: %s", q->path, fw_strerror(w));
		return FC_EXIT_FAIL;
	}
	if (rc == 0)
		printf("%s: unix_ms %" PRIu64 "  %s  (was %" PRIu64 "  %s)\n", q->path, q->ms, iso,
		       old.unix_ms, fw_format_iso8601(old.unix_ms, old_iso));
	else
		printf("%s: unix_ms %" PRIu64 "  %s  (was %s)\n", q->path, q->ms, iso,
		       rc == -ENOENT ? "absent" : "corrupt");
	printf("  layout: %s\n", fw_mark_layout_format(&layout, l1));
	return FC_EXIT_OK;
}

static int mark_convert_locked(const char *cmd, const struct mark_req *q)
{
	char iso[FW_ISO8601_LEN], old_iso[FW_ISO8601_LEN];
	char l1[FW_MARK_LAYOUT_LEN], l2[FW_MARK_LAYOUT_LEN];
	struct fw_mark old;
	uint64_t ms;
	int rc = fw_mark_read_full(q->path, &old);

	if (rc != 0) {
		fc_err(cmd, "--convert: %s: %s%s", q->path,
		       rc == -ENOENT ? "no such file" : fw_strerror(rc),
		       rc == -ENOENT || rc == FW_ESTATE_CORRUPT
			       ? " (a lost mark is not converted: see doc/runbook.md)"
			       : "");
		return FC_EXIT_FAIL;
	}
	if (old.format == 1) {
		fc_err(cmd,
		       "--convert: %s records no layout (format 1): start the responder once "
		       "with the configuration that wrote it (it rewrites the mark with its "
		       "layout), stop it, then convert",
		       q->path);
		return FC_EXIT_FAIL;
	}
	if (fw_mark_layout_equal(&old.layout, &q->layout)) {
		printf("%s: already fences %s: unchanged\n", q->path,
		       fw_mark_layout_format(&old.layout, l1));
		return FC_EXIT_OK;
	}
	rc = fw_mark_convert(old.unix_ms, &old.layout, &q->layout, &ms);
	if (rc != 0) {
		fc_err(cmd,
		       "--convert: the layout %s cannot issue any ID above those the mark "
		       "%" PRIu64 " allowed in %s (its timestamp field ends first)",
		       fw_mark_layout_format(&q->layout, l2), old.unix_ms,
		       fw_mark_layout_format(&old.layout, l1));
		return FC_EXIT_FAIL;
	}
	int w = fw_mark_write(q->path, ms, &q->layout);
	if (w < 0) {
		fc_err(cmd, "%s: %s", q->path, fw_strerror(w));
		return FC_EXIT_FAIL;
	}
	printf("%s: converted: unix_ms %" PRIu64 "  %s  in %s\n"
	       "  -> unix_ms %" PRIu64 "  %s  in %s\n",
	       q->path, old.unix_ms, fw_format_iso8601(old.unix_ms, old_iso),
	       fw_mark_layout_format(&old.layout, l1), ms, fw_format_iso8601(ms, iso),
	       fw_mark_layout_format(&q->layout, l2));
	return FC_EXIT_OK;
}

static int mark_write(const char *cmd, const struct mark_req *q)
{
	char lerr[512];
	struct fw_state_lock *lock = NULL;
	/* a responder on this state would overwrite the new mark at its stop */
	int lrc = fw_state_lock_take(q->path, &lock, lerr, sizeof(lerr));
	if (lrc != 0) {
		fc_err(cmd, "%s%s", lerr, lrc == -EWOULDBLOCK ? "; the mark was not changed" : "");
		return FC_EXIT_FAIL;
	}
	int rc = q->convert ? mark_convert_locked(cmd, q) : mark_set_locked(cmd, q);
	fw_state_lock_free(lock);
	return rc;
}

int cmd_mark(int argc, char **argv)
{
	const char *cmd = argv[0], *set = NULL, *val;
	struct layout_opts lo = {0};
	struct mark_req q = {0};
	bool opts = true;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r = opts ? fc_opt_value(argc, argv, &i, "--set", &val) : 0;

		if (r < 0)
			return FC_EXIT_USAGE;
		if (r > 0) {
			if (strchr(val, '=') == NULL) {
				if (set) {
					fc_err(cmd, "--set %s: the mark is given once (--set %s)",
					       val, set);
					return FC_EXIT_USAGE;
				}
				set = val;
			} else if (strncmp(val, "id.", 3) != 0) {
				fc_err(cmd, "--set %s: only [id] keys (id.KEY=VALUE) make a layout",
				       val);
				return FC_EXIT_USAGE;
			} else if (lo.n_set == OVERRIDES_MAX) {
				fc_err(cmd, "--set %s: at most %u overrides", val, OVERRIDES_MAX);
				return FC_EXIT_USAGE;
			} else {
				lo.set[lo.n_set++] = val;
			}
			continue;
		}
		r = opts ? fc_opt_value(argc, argv, &i, "--config", &val) : 0;
		if (r < 0)
			return FC_EXIT_USAGE;
		if (r > 0) {
			lo.config = val;
			continue;
		}
		if (opts && fc_is_help(a)) {
			mark_help(stdout);
			return FC_EXIT_OK;
		} else if (opts && !strcmp(a, "--force")) {
			q.force = true;
		} else if (opts && !strcmp(a, "--convert")) {
			q.convert = true;
		} else if (opts && !strcmp(a, "--")) {
			opts = false;
		} else if ((opts && a[0] == '-' && a[1] != '\0') || q.path) {
			return fc_unknown_arg(cmd, a);
		} else {
			q.path = a;
		}
	}
	if (!q.path) {
		fc_err(cmd, "missing FILE (the responder's state.file)");
		return FC_EXIT_USAGE;
	}
	if (*q.path == '\0') {
		fc_err(cmd, "FILE: empty path");
		return FC_EXIT_USAGE;
	}
	q.layout_given = lo.config || lo.n_set;
	if (q.convert && set) {
		fc_err(cmd, "--convert computes the mark: not with --set %s", set);
		return FC_EXIT_USAGE;
	}
	if (q.convert && !q.layout_given) {
		fc_err(cmd, "--convert: give the new layout (--config FILE or --set id.KEY=VALUE)");
		return FC_EXIT_USAGE;
	}
	if (!set && !q.convert) {
		if (q.force || q.layout_given) {
			fc_err(cmd, "%s: only with --set or --convert",
			       q.force     ? "--force"
			       : lo.config ? "--config"
					   : "--set id.KEY=VALUE");
			return FC_EXIT_USAGE;
		}
		return mark_read(cmd, q.path);
	}
	int lrc = layout_of(cmd, &lo, &q.layout, &q.margin_ms);
	if (lrc)
		return lrc;
	if (q.convert)
		return mark_write(cmd, &q);
	if (!strcmp(set, "now")) {
		q.ms = fw_wall_ms();
	} else {
		enum fc_num r = fc_parse_u64(set, &q.ms);

		if (r != FC_NUM_OK || q.ms < 1 || q.ms > MARK_MS_MAX) {
			fc_err(cmd, "--set %s: %s (allowed 1-%llu or 'now')", set,
			       r == FC_NUM_OK || r == FC_NUM_TOO_BIG ? "out of range"
			       : r == FC_NUM_EMPTY                   ? "empty"
			       : r == FC_NUM_NEGATIVE                ? "negative"
								     : "not a decimal number",
			       MARK_MS_MAX);
			return FC_EXIT_USAGE;
		}
	}
	return mark_write(cmd, &q);
}
