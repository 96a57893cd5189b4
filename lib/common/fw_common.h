/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Project-wide helpers shared by every component: symbol visibility,
 * branch hints and small arithmetic helpers. No DPDK, no libc beyond C11.
 */
#pragma once

#include <stdint.h>

/* Marks a symbol exported from a flakewire library; everything else is hidden. */
#define FW_API __attribute__((visibility("default")))

#define FW_LIKELY(x)   __builtin_expect(!!(x), 1)
#define FW_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Size of a cache line on the targets flakewire supports (x86_64, arm64). */
#define FW_CACHE_LINE    64
#define FW_CACHE_ALIGNED __attribute__((aligned(FW_CACHE_LINE)))

#define FW_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define FW_MIN(a, b) ((a) < (b) ? (a) : (b))
#define FW_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Unix milliseconds of the default epoch, 2026-01-01T00:00:00Z. */
#define FW_DEFAULT_EPOCH_MS 1767225600000ULL
