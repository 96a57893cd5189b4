// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

/** A reply failed validation; none of its IDs were used. */
public class InvalidReplyException extends FlakewireException {
    private static final long serialVersionUID = 1L;

    public InvalidReplyException(String msg) {
        super("flakewire: invalid reply: " + msg);
    }
}
