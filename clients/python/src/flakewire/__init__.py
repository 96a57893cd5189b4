# SPDX-License-Identifier: BSD-3-Clause
"""flakewire: a client for the flakewire Snowflake ID responders (UDP,
protocol version 1). Standard library only."""

from .client import (AddressError, Client, ClosedError, FlakewireError, InvalidReplyError,
                     NoResponseError, ResolveError, StatusError, parse_server)
from .layout import DEFAULT, Layout, Parts, UUIDParts, decode, uuid7_parts, uuid7_unix_ms
from . import wire

__all__ = ["AddressError", "ClosedError", "ResolveError", "Client", "FlakewireError", "InvalidReplyError", "NoResponseError", "StatusError",
           "parse_server", "DEFAULT", "Layout", "Parts", "UUIDParts", "decode", "uuid7_parts",
           "uuid7_unix_ms", "wire"]
__version__ = "0.1.0"
