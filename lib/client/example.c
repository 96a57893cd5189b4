/* SPDX-License-Identifier: BSD-3-Clause */
/* The README's client example, built so it cannot rot: prints 3 IDs. */
#include <inttypes.h>
#include <stdio.h>

#include "fw_client.h"
#include "fw_err.h"

int main(int argc, char **argv)
{
	const char *servers[] = {argc > 1 ? argv[1] : "127.0.0.1:4242"};
	struct fw_client *c = NULL;
	uint64_t id;

	int rc = fw_client_open(servers, 1, NULL, &c);
	for (int i = 0; rc == 0 && i < 3; i++)
		if ((rc = fw_client_next(c, &id)) == 0)
			printf("%" PRIu64 "\n", id);
	fw_client_close(c);
	if (rc != 0)
		fprintf(stderr, "fw_client: %s\n", fw_strerror(rc));
	return rc == 0 ? 0 : 1;
}
