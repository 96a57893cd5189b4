/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Secret files ([fleet] etcd_password_file, zookeeper_auth_file): read the
 * way PostgreSQL reads its key file. The file must be a regular file owned
 * by root with at most group read (0640 or stricter, so a Kubernetes Secret
 * mounted with a group works), or owned by the process's user with no
 * access for group or others (0600 or stricter); anything else is refused
 * before a byte is read. Opened with O_CLOEXEC and O_NOFOLLOW, so no child
 * inherits it and no symlink swaps it. The secret is never echoed in a
 * message.
 */
#pragma once

#include <stddef.h>

#include "fw_common.h"

/*
 * Reads the first line of @path (without its newline) into @buf (@cap
 * bytes, NUL included). @what names the setting in the message
 * ("[fleet] zookeeper_auth_file").
 * Returns 0; -EPERM (owner or permissions refused: @err says which and what
 * is allowed); -EINVAL (empty, or longer than @cap - 1); another negated
 * errno (cannot be opened or read). On error @buf is zeroed.
 */
FW_API int fw_secret_read(const char *path, const char *what, char *buf, size_t cap, char *err,
			  size_t errlen);
