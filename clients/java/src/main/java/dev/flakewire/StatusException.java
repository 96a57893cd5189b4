// SPDX-License-Identifier: BSD-3-Clause
package dev.flakewire;

/**
 * A call ended at once on a status (doc/clients.md, "Statuses"): a responder answered BAD_REQUEST or BAD_VERSION
 * (another responder would say the same), or every responder answered REFUSED in the call (the last one's reply).
 * NO_LEASE, CLOCK_UNSAFE and RETRY_AFTER never end a call: at the deadline they are named in a
 * {@link NoResponseException} ("SERVER: answered NO_LEASE").
 */
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
