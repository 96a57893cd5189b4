/* SPDX-License-Identifier: BSD-3-Clause */
/* flakewire's log type (registered by main.c) and its wrapper macro. */
#pragma once

#include <rte_log.h>

extern int fwire_logtype;
#define FW_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, fwire_logtype, "flakewire: " fmt "\n", ##__VA_ARGS__)
