// SPDX-License-Identifier: BSD-3-Clause
//! The one error type of the crate: the six errors every flakewire client
//! has (doc/clients.md, "Errors: one taxonomy"), plus options and I/O.

use crate::wire::status_name;
use std::fmt;
use std::io;

/// Every error of this crate.
///
/// ```
/// let e = flakewire::Client::new::<&str>(&[]).unwrap_err();
/// assert!(matches!(e, flakewire::Error::Address { .. }));
/// assert!(flakewire::Error::NoResponse { tried: vec![] }.is_timeout());
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A server that cannot be parsed as an address (or no server given).
    Address {
        /// Which server (`#2 of 3`), empty when none was given.
        server: String,
        /// What is wrong.
        msg: String,
    },
    /// A host name that does not resolve.
    Resolve {
        /// Which server (`#2 of 3`).
        server: String,
        /// The resolver's error.
        source: io::Error,
    },
    /// No responder answered within the call's deadline; `tried` names each
    /// responder of the call and what it did, in the order they were asked
    /// (`"127.0.0.1:4243: no reply in 80 ms"`, `"... RETRY_AFTER 900 ms"`,
    /// `"... refused"`).
    NoResponse {
        /// One entry per responder asked.
        tried: Vec<String>,
    },
    /// BAD_REQUEST or BAD_VERSION, or REFUSED from every responder (doc/clients.md, "Statuses").
    Status {
        /// The status code (`wire::ST_*`).
        status: u8,
        /// The responder that answered it.
        server: String,
    },
    /// A reply failed validation; none of its IDs were used.
    InvalidReply(String),
    /// The client was closed; buffered IDs are no longer handed out.
    Closed,
    /// An option out of range: its name, the value and the allowed range.
    Option {
        /// The option's name (the builder method's).
        name: String,
        /// The value given.
        value: String,
        /// What is allowed.
        range: String,
    },
    /// A socket could not be created or used.
    Io(io::Error),
}

impl Error {
    /// Whether this is the no-response (deadline) error.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::NoResponse { .. })
    }

    /// The same error again (`io::Error` is not `Clone`: kind and text are kept).
    pub(crate) fn duplicate(&self) -> Error {
        let io = |e: &io::Error| io::Error::new(e.kind(), e.to_string());
        match self {
            Error::Address { server, msg } => Error::Address { server: server.clone(), msg: msg.clone() },
            Error::Resolve { server, source } => Error::Resolve { server: server.clone(), source: io(source) },
            Error::NoResponse { tried } => Error::NoResponse { tried: tried.clone() },
            Error::Status { status, server } => Error::Status { status: *status, server: server.clone() },
            Error::InvalidReply(m) => Error::InvalidReply(m.clone()),
            Error::Closed => Error::Closed,
            Error::Option { name, value, range } => {
                Error::Option { name: name.clone(), value: value.clone(), range: range.clone() }
            }
            Error::Io(e) => Error::Io(io(e)),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Address { server, msg } if server.is_empty() => write!(f, "flakewire: {}", msg),
            Error::Address { server, msg } => write!(f, "flakewire: server {}: {}", server, msg),
            Error::Resolve { server, source } => write!(f, "flakewire: server {} does not resolve: {}", server, source),
            Error::NoResponse { tried } => write!(f, "flakewire: no responder answered: {}", tried.join("; ")),
            Error::Status { status, server } => {
                write!(f, "flakewire: {} answered {} (status {})", server, status_name(*status), status)
            }
            Error::InvalidReply(m) => write!(f, "flakewire: invalid reply: {}", m),
            Error::Closed => f.write_str("flakewire: client closed"),
            Error::Option { name, value, range } => write!(f, "flakewire: {} {} not in {}", name, value, range),
            Error::Io(e) => write!(f, "flakewire: {}", e),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Resolve { source, .. } => Some(source),
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}
