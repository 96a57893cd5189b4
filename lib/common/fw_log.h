/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One log sink for every component that runs inside a responder (the keeper,
 * the fleet, the metrics server): a component never prints; it formats one
 * line (no newline, at most FW_LOG_LINE_MAX - 1 bytes, longer lines cut) and
 * hands it with a level to the function its owner gave it. The owner (the
 * responder, a tool, a test) decides where lines go (stderr, the journal, a
 * buffer to assert on) and which levels it keeps.
 *
 * Header only (C11 + stdarg), no DPDK; thread-safe as long as the owner's
 * function is (each call formats on its own stack).
 */
#pragma once

#include <stdarg.h>
#include <stdio.h>

/* Levels, most severe first (syslog's order: a smaller value is worse). */
enum fw_log_level {
	FW_LOG_ERR = 0,     /* the component could not do what it is for */
	FW_LOG_WARNING = 1, /* it did, degraded or with an operator's attention needed */
	FW_LOG_INFO = 2,    /* a change of state worth one line */
};

/* The owner's function: @line is one line without newline, valid during the call. */
typedef void (*fw_log_fn)(void *arg, enum fw_log_level level, const char *line);

/* A component's sink; {NULL, NULL} drops every line. */
struct fw_log {
	fw_log_fn fn;
	void *arg;
};

/* 2048: the fleet's "no worker ID left" line names every live owner (up to 1.5 KiB) */
#define FW_LOG_LINE_MAX 2048

/* Formats one line and hands it to @log (nothing when @log or its fn is NULL). */
static inline void fw_logv(const struct fw_log *log, enum fw_log_level level, const char *fmt,
			   va_list ap)
{
	char line[FW_LOG_LINE_MAX];

	if (log == NULL || log->fn == NULL)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	log->fn(log->arg, level, line);
}

static inline void fw_log(const struct fw_log *log, enum fw_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline void fw_log(const struct fw_log *log, enum fw_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fw_logv(log, level, fmt, ap);
	va_end(ap);
}
