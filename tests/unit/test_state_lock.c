/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The host-wide locks of static worker IDs (lib/mark/state_lock.c, issue 48
 * case 6): a lock is named by what makes two IDs equal, the node field's
 * value (datacenter << worker_bits | worker) below the same number of
 * sequence bits, so two layouts whose IDs can collide take the same lock
 * whatever their datacenter/worker split, and two whose node values differ
 * do not; and the mount check the container images ask for
 * ([state] lock_dir_mount), read from a mountinfo file.
 * flock conflicts between two open file descriptions of one process, so one
 * process stands for two responders here.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fw_state_lock.h"

struct dir {
	char path[64];
	char locks[96];
	int n_state;
};

static int setup(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));
	if (d == NULL)
		return -1;
	strcpy(d->path, "/tmp/fw_state_lock_XXXXXX");
	if (!mkdtemp(d->path)) {
		free(d);
		return -1;
	}
	snprintf(d->locks, sizeof(d->locks), "%s/locks", d->path);
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct dir *d = *state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
	if (system(cmd) != 0)
		return -1;
	free(d);
	return 0;
}

/* A responder's locks: its own state file, then its static node values. */
static int lock(struct dir *d, struct fw_state_lock **l, uint32_t dc, uint32_t worker,
		uint32_t worker_bits, uint32_t seq_bits, char *err, size_t errlen)
{
	char state_file[128];
	snprintf(state_file, sizeof(state_file), "%s/mark%d", d->path, d->n_state++);
	assert_int_equal(fw_state_lock_take(state_file, l, err, errlen), 0);
	uint32_t node = dc << worker_bits | worker;
	return fw_state_lock_workers(*l, d->locks, &node, 1, worker_bits, seq_bits, err, errlen);
}

/*
 * Same node value 33, split differently (10 worker bits, worker 33; 5
 * datacenter bits and 5 worker bits, datacenter 1 worker 1), 12 sequence
 * bits each: their IDs are equal at the same ms, so the second refuses.
 */
static void test_colliding_layouts_conflict(void **state)
{
	struct dir *d = *state;
	struct fw_state_lock *a = NULL, *b = NULL;
	char err[512] = "";
	assert_int_equal(lock(d, &a, 0, 33, 10, 12, err, sizeof(err)), 0);
	int rc = lock(d, &b, 1, 1, 5, 12, err, sizeof(err));
	if (rc != -EWOULDBLOCK)
		fail_msg("datacenter 1 worker 1 (5+5 bits) beside worker 33 (10 bits): %d, want "
			 "-EWOULDBLOCK (both are node value 33: the same IDs)",
			 rc);
	assert_non_null(strstr(err, "static worker ID 1 (datacenter 1: node field 33, 12 "
				    "sequence bits) is locked by PID "));
	assert_non_null(strstr(err, "/locks/node33-seq12.lock)"));
	fw_state_lock_free(b);
	fw_state_lock_free(a);
}

/*
 * Different node values never collide below the same sequence width: the
 * same datacenter and worker numbers under other widths (datacenter 1
 * worker 0 is node 32 with 5 worker bits, node 128 with 7) both serve; so
 * do datacenters 0 and 1 of one layout with the same worker.
 */
static void test_distinct_node_values_do_not_conflict(void **state)
{
	struct dir *d = *state;
	struct fw_state_lock *a = NULL, *b = NULL, *c = NULL;
	char err[512] = "";
	assert_int_equal(lock(d, &a, 1, 0, 5, 12, err, sizeof(err)), 0);
	int rc = lock(d, &b, 1, 0, 7, 12, err, sizeof(err));
	if (rc != 0)
		fail_msg("datacenter 1 worker 0 with 7 worker bits (node 128) beside the same "
			 "with 5 (node 32): %d (%s), want 0",
			 rc, err);
	assert_int_equal(lock(d, &c, 0, 0, 5, 12, err, sizeof(err)), 0);
	fw_state_lock_free(c);
	fw_state_lock_free(b);
	fw_state_lock_free(a);
	/* another sequence width: another ID space (the time field sits elsewhere) */
	assert_int_equal(lock(d, &a, 0, 5, 10, 12, err, sizeof(err)), 0);
	assert_int_equal(lock(d, &b, 0, 5, 10, 13, err, sizeof(err)), 0);
	fw_state_lock_free(b);
	fw_state_lock_free(a);
	/* and the same layout twice conflicts, as before */
	assert_int_equal(lock(d, &a, 0, 5, 10, 12, err, sizeof(err)), 0);
	assert_int_equal(lock(d, &b, 0, 5, 10, 12, err, sizeof(err)), -EWOULDBLOCK);
	fw_state_lock_free(b);
	fw_state_lock_free(a);
}

static void test_name(void **state)
{
	(void)state;
	char buf[32];
	assert_int_equal(fw_state_lock_worker_name(buf, sizeof(buf), 33, 12), 0);
	assert_string_equal(buf, "node33-seq12.lock");
	assert_int_equal(fw_state_lock_worker_name(buf, 8, 33, 12), -ENAMETOOLONG);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* lock_dir must be a mount point of its own (its own mountinfo line), never "/". */
static void test_mounted(void **state)
{
	struct dir *d = *state;
	char mi[128], text[1024], spaced[128];
	snprintf(mi, sizeof(mi), "%s/mountinfo", d->path);
	snprintf(spaced, sizeof(spaced), "%s/a b", d->path);
	assert_int_equal(mkdir(d->locks, 0755), 0);
	assert_int_equal(mkdir(spaced, 0755), 0);
	/* a container: its root, a tmpfs /run, nothing at lock_dir */
	snprintf(text, sizeof(text),
		 "600 500 0:50 / / rw,relatime - overlay overlay rw\n"
		 "601 600 0:51 / %s rw,nosuid - tmpfs tmpfs rw\n",
		 d->path);
	put(mi, text);
	assert_int_equal(fw_state_lock_dir_mounted(d->locks, mi), 0); /* inside a mount: no */
	assert_int_equal(fw_state_lock_dir_mounted(d->path, mi), 1);
	assert_int_equal(fw_state_lock_dir_mounted("/", mi), 0); /* the root is never one */
	/* a host directory bind-mounted at lock_dir (and a name with a space, escaped) */
	snprintf(text, sizeof(text),
		 "600 500 0:50 / / rw,relatime - overlay overlay rw\n"
		 "602 600 8:1 /run/lock/flakewire %s rw - ext4 /dev/sda1 rw\n"
		 "603 600 8:1 /x %s/a\\040b rw - ext4 /dev/sda1 rw\n",
		 d->locks, d->path);
	put(mi, text);
	assert_int_equal(fw_state_lock_dir_mounted(d->locks, mi), 1);
	assert_int_equal(fw_state_lock_dir_mounted(spaced, mi), 1);
	/* a path through "..", resolved first */
	char dots[160];
	snprintf(dots, sizeof(dots), "%s/a b/../locks", d->path);
	assert_int_equal(fw_state_lock_dir_mounted(dots, mi), 1);
	assert_int_equal(fw_state_lock_dir_mounted("/nonexistent-fw-lock-dir", mi), -ENOENT);
	snprintf(text, sizeof(text), "%s/none", d->path);
	assert_int_equal(fw_state_lock_dir_mounted(d->locks, text), -ENOENT);
	/* this process's own mountinfo reads (whatever it says) */
	assert_true(fw_state_lock_dir_mounted("/", NULL) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_colliding_layouts_conflict, setup, teardown),
		cmocka_unit_test_setup_teardown(test_distinct_node_values_do_not_conflict, setup,
						teardown),
		cmocka_unit_test(test_name),
		cmocka_unit_test_setup_teardown(test_mounted, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
