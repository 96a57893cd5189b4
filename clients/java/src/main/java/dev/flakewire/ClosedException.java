// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

/** The client was closed: nothing is handed out any more, buffered IDs included. */
public class ClosedException extends FlakewireException {
    private static final long serialVersionUID = 1L;

    public ClosedException() {
        super("flakewire: client closed");
    }
}
