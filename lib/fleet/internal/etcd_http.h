/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_etcd.c's transport: one HTTP connection to etcd's JSON gateway
 * (libcurl easy handle), endpoint failover, authentication, base64.
 * Internal to lib/fleet. One connection is used by one thread at a time;
 * the store has two (its caller's and the keep-alive thread's), sharing
 * the options and the auth token under the store's lock.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "fw_fleet_store_etcd.h"

/* What the two connections share (owned by the store). */
struct etcd_shared {
	char ep[FW_FLEET_ETCD_ENDPOINTS_MAX][256];
	int n_ep;
	char ca[512], cert[512], key[512], user[128], password[256], proxy[256];
	uint32_t request_ms;
	pthread_mutex_t mu; /* guards token */
	char token[8192];   /* simple tokens are 16 bytes; a JWT (--auth-token jwt) about 1 KiB */
};

struct etcd_conn {
	struct etcd_shared *sh;
	void *curl; /* CURL * */
	int cur;    /* the endpoint that answered last */
	char err[1024];
	uint64_t date_ms;    /* the last reply's Date header, unix ms (0: none) */
	uint32_t timeout_ms; /* this try's HTTP timeout (etcd_call sets it) */
};

/* gRPC status codes etcd puts in an error reply's "code". */
enum { ETCD_NOT_FOUND = 5, ETCD_UNAUTHENTICATED = 16 };

/* Fills @sh from @o. -EINVAL (with @why) for bad endpoints or strings too long. */
int etcd_shared_init(struct etcd_shared *sh, const struct fw_fleet_etcd_opts *o, char *why,
		     size_t whylen);
void etcd_shared_fini(struct etcd_shared *sh);

int etcd_conn_init(struct etcd_conn *c, struct etcd_shared *sh);
void etcd_conn_fini(struct etcd_conn *c);

/*
 * POSTs @req (consumed) to @path ("/v3/kv/range") and parses the reply
 * into *@out (the caller puts it), trying the endpoints in turn (each try
 * a quarter of request_ms, at least 250 ms) until one answers or
 * request_ms is spent; an error reply about the leader (an election) counts
 * as no answer. Returns 0; -ENOTCONN when no endpoint answered in time
 * (c->err says why); -EIO for an error reply (its gRPC code in *@code when
 * @code is not NULL, its message in c->err) or a reply that is not JSON.
 */
int etcd_call(struct etcd_conn *c, const char *path, struct json_object *req,
	      struct json_object **out, int *code);

/* Base64 of @len bytes of @p, as a new JSON string. */
struct json_object *etcd_b64(const void *p, size_t len);

/* Decodes the base64 string member @name of @o into @buf (@cap bytes). Returns the length,
 * 0 when absent, -1 when it does not fit or is not base64. */
int etcd_unb64(struct json_object *o, const char *name, char *buf, size_t cap);

/* The int64 member @name of @o (the gateway writes int64 as strings); 0 when absent. */
int64_t etcd_i64(struct json_object *o, const char *name);

/* A JSON string of an int64 (the form the gateway reads back). */
struct json_object *etcd_i64s(int64_t v);
