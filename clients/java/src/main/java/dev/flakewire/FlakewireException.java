// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

import java.io.IOException;

/** Base class of the errors the client throws. */
public class FlakewireException extends IOException {
    private static final long serialVersionUID = 1L;

    public FlakewireException(String msg) {
        super(msg);
    }
}
