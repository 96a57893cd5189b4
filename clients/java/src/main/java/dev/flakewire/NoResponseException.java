// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

/** No responder answered within its attempts. */
public class NoResponseException extends FlakewireException {
    private static final long serialVersionUID = 1L;

    public NoResponseException(String msg) {
        super(msg);
    }
}
