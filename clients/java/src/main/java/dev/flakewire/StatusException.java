// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

/** Every responder answered an error status (not RETRY_AFTER) in one call; the last one's reply. */
public class StatusException extends FlakewireException {
    private static final long serialVersionUID = 1L;
    public final int status;
    public final transient Wire.Reply reply;

    public StatusException(Wire.Reply reply) {
        super("flakewire: responder answered " + Wire.statusName(reply.status()) + " (status " + reply.status() + ")");
        this.status = reply.status();
        this.reply = reply;
    }
}
