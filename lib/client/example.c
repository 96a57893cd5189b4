/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The README's client example, built so it cannot rot: prints 3 IDs from
 * the responders named on the command line (default 127.0.0.1:4242). Name
 * several: the client fails over to the next one on a timeout,
 * CLOCK_UNSAFE or NO_LEASE.
 */
#include <inttypes.h>
#include <stdio.h>

#include "fw_client.h"
#include "fw_err.h"

int main(int argc, char **argv)
{
	const char *local[] = {"127.0.0.1:4242"};
	const char *const *servers = argc > 1 ? (const char *const *)argv + 1 : local;
	size_t n = argc > 1 ? (size_t)argc - 1 : 1;
	struct fw_client *c = NULL;
	uint64_t id;

	int rc = fw_client_open(servers, n, NULL, &c); /* NULL: default options */
	for (int i = 0; rc == 0 && i < 3; i++)
		if ((rc = fw_client_next(c, &id)) == 0) /* prefetched, validated, thread-safe */
			printf("%" PRIu64 "\n", id);
	if (rc == FW_ESTATUS) /* REFUSED by every responder, or BAD_*: say why */
		fprintf(stderr, "fw_client: %s: %s\n", fw_strerror(rc),
			fw_wire_status_name(fw_client_last_status(c)));
	else if (rc != 0)
		fprintf(stderr, "fw_client: %s\n", fw_strerror(rc));
	fw_client_close(c);
	return rc == 0 ? 0 : 1;
}
