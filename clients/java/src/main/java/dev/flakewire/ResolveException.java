// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

/** A responder's host name does not resolve (the cause is the resolver's exception). */
public class ResolveException extends FlakewireException {
    private static final long serialVersionUID = 1L;

    public ResolveException(String msg, Throwable cause) {
        super(msg);
        initCause(cause);
    }
}
