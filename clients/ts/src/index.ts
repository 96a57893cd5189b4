// SPDX-License-Identifier: BSD-3-Clause
// flakewire: a client for the flakewire Snowflake ID responders (UDP,
// protocol version 1). No runtime dependencies.
export {
  AddressError, Client, ClosedError, FlakewireError, InvalidReplyError, NoResponseError, ResolveError,
  StatusError, parseServer,
  RETRY_AFTER_MAX_US,
} from "./client.js";
export type { ErrorCode, Options, Stats } from "./client.js";
export {
  DEFAULT_EPOCH_MS, DEFAULT_LAYOUT, INT64_MAX, Layout, UUID7_TAG, parseUUID, readUUID, uuid7UnixMs,
} from "./layout.js";
export type { Parts, UUIDParts } from "./layout.js";
export * as wire from "./wire.js";
