// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

import java.util.List;

/** No responder answered within its attempts; {@link #tried} says, per server, what happened. */
public class NoResponseException extends FlakewireException {
    private static final long serialVersionUID = 1L;

    /** "SERVER: no reply in 3000 ms" or "SERVER: refused (ICMP port unreachable)", in the order tried. */
    public final List<String> tried;

    public NoResponseException(List<String> tried) {
        super("flakewire: no responder answered: " + String.join("; ", tried));
        this.tried = List.copyOf(tried);
    }
}
