/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A seqlock over a small plain struct, for data one thread writes now and
 * then and other threads read whole (a status, a snapshot): the writer never
 * waits, a reader retries until it copied the struct with no write in
 * between, so it never sees half of one write and half of another.
 *
 * The struct is copied as 64-bit words through atomics (C11, no DPDK;
 * release stores, acquire loads: plain moves on x86-64, and no fence):
 * no access is a data race in the C11 model, so ThreadSanitizer checks the
 * users. One writer at a time (the caller orders writers);
 * readers may be any number of threads.
 *
 *   struct my_status { ... };
 *   FW_SEQLOCK(my_status) pub;                       // beside the writer's state
 *   fw_seqlock_write(&pub.seq, pub.w, &st, sizeof(st));
 *   fw_seqlock_read(&pub.seq, pub.w, &copy, sizeof(copy));
 */
#pragma once

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A seqlock-published copy of struct @tag: the sequence and the words. */
#define FW_SEQLOCK(tag)                                           \
	struct {                                                  \
		atomic_uint seq;                                  \
		_Atomic uint64_t w[(sizeof(struct tag) + 7) / 8]; \
	}

/* Publishes the @size bytes at @src into @w (FW_SEQLOCK's words) under @seq. */
static inline void fw_seqlock_write(atomic_uint *seq, _Atomic uint64_t *w, const void *src,
				    size_t size)
{
	unsigned s = atomic_load_explicit(seq, memory_order_relaxed);

	/*
	 * Odd: a write is on. The words are stored with release, so a reader
	 * that loads one of them (acquire) sees the odd sequence too and retries;
	 * no fence (ThreadSanitizer does not model fences).
	 */
	atomic_store_explicit(seq, s + 1, memory_order_relaxed);
	for (size_t i = 0; i * 8 < size; i++) {
		uint64_t v = 0;
		memcpy(&v, (const uint8_t *)src + i * 8, size - i * 8 < 8 ? size - i * 8 : 8);
		atomic_store_explicit(&w[i], v, memory_order_release);
	}
	atomic_store_explicit(seq, s + 2, memory_order_release);
}

/*
 * Copies the published object (@size bytes) from @w into @dst: a copy of
 * one whole write (retried while a write overlaps). Before the first write
 * the words read as they were initialised (zeroed: all 0).
 */
static inline void fw_seqlock_read(const atomic_uint *seq, const _Atomic uint64_t *w, void *dst,
				   size_t size)
{
	unsigned a, b;

	do {
		a = atomic_load_explicit(seq, memory_order_acquire);
		for (size_t i = 0; i * 8 < size; i++) {
			/* acquire: the second look at the sequence stays after every word */
			uint64_t v = atomic_load_explicit(&w[i], memory_order_acquire);
			memcpy((uint8_t *)dst + i * 8, &v, size - i * 8 < 8 ? size - i * 8 : 8);
		}
		b = atomic_load_explicit(seq, memory_order_relaxed);
	} while ((a & 1) || a != b);
}
