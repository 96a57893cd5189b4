// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

import java.util.List;

/** A call's deadline passed without an OK reply; {@link #tried} says what each server did in that call. */
public class NoResponseException extends FlakewireException {
    private static final long serialVersionUID = 1L;

    /**
     * One entry per server, in configured order: "SERVER: no reply in 80 ms", "SERVER: RETRY_AFTER 900 ms",
     * "SERVER: refused", "SERVER: answered NO_LEASE" (an error status), or "SERVER: not tried (why)"; a caller
     * that waited for another call (a refill, or this client's other call) gets that call's entries and a last
     * one in parentheses.
     */
    public final List<String> tried;

    public NoResponseException(List<String> tried) {
        super("flakewire: no responder answered: " + String.join("; ", tried));
        this.tried = List.copyOf(tried);
    }
}
