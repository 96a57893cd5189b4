/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The flags every subcommand that talks to responders shares:
 *   --server HOST:PORT (repeatable) --timeout MS --trusted
 * and the helpers that turn them into an fw_client and describe its replies.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "fw_client.h"
#include "fw_layout.h"
#include "fw_wire.h"

#define CLIENT_ARGS_SERVERS_MAX 16
#define CLIENT_ARGS_DEFAULT     "127.0.0.1:4242"
#define CLIENT_ARGS_TIMEOUT_MIN 10
#define CLIENT_ARGS_TIMEOUT_MAX 60000
/* --timeout is each call's deadline (issue 49; doc/clients.md, "Availability"). */
#define CLIENT_ARGS_TIMEOUT_DEF 1000

struct client_args {
	const char *servers[CLIENT_ARGS_SERVERS_MAX];
	size_t n; /* 0 until a --server is given; finish() then uses the default */
	uint64_t timeout_ms;
	bool trusted;
};

void client_args_init(struct client_args *ca);

/*
 * Consumes argv[*i] (and its value) if it is --server, --timeout or --trusted.
 * Returns 1 if consumed, 0 if not one of them, -1 on an error already
 * reported on stderr under the command name argv[0].
 */
int client_args_parse(struct client_args *ca, int argc, char **argv, int *i);

/* Fills in the default server when none was given. */
void client_args_finish(struct client_args *ca);

/*
 * Opens a client for servers [first, first + n) of @ca. An address that does
 * not parse or resolve is reported naming it.
 * Returns FC_EXIT_OK with *out set, FC_EXIT_USAGE (a bad --server) or
 * FC_EXIT_FAIL, the error reported on stderr under @cmd.
 */
int client_args_open(const struct client_args *ca, size_t first, size_t n, const char *cmd,
		     struct fw_client **out);

/*
 * Resolves a --server value as fw_client_open() does ("HOST:PORT", "HOST",
 * "[IPV6]:PORT", "[IPV6]", a bare IPv6 address; port FW_WIRE_DEFAULT_PORT),
 * for callers that use raw sockets. Returns 0 or FW_ERESOLVE.
 */
int client_args_resolve(const char *server, struct sockaddr_storage *ss, socklen_t *len);

/* How --timeout is used, for the help text. */
enum client_args_mode {
	CLIENT_ARGS_REQUEST, /* a request resent until --timeout, failing over */
	CLIENT_ARGS_BENCH,   /* one wait of --timeout per request, no resend */
};

/* Prints the help lines for the flags. */
void client_args_help(FILE *f, enum client_args_mode mode);

/*
 * Reports a failed request on stderr as one line under @cmd: a timeout with
 * the deadline and what each responder did (fw_client_last_error()), an
 * error status with its name, or the error code's description.
 */
void client_args_report(const struct client_args *ca, const char *cmd, struct fw_client *c, int rc);

/* Takes the layout out of an INFO body. Returns 0 or an FW_ELAYOUT_* code. */
int client_args_layout(const struct fw_wire_info *info, struct fw_layout *l);

/* Writes the clock-state flags as words ("borrowed, backstep") or "none". */
void client_args_flag_words(uint8_t flags, char *buf, size_t cap);

/* Writes the clock-state flags as a JSON array of strings. */
void client_args_flag_json(uint8_t flags, char *buf, size_t cap);
