package org.smbdirect.rdma.sim.internal;

/**
 * The bytes one step of a connection's data path has moved, against what a step may move before
 * it yields. Owned by the connection's actor.
 */
final class ByteBudget {
    /**
     * Bytes one step moves at most before it yields (4 MiB: about 80 us of copying on the CI
     * machine): the completions of what moved are then notified, and new work is posted meanwhile,
     * before more data moves. Under a bulk load that is one notification per few large requests, as
     * a NIC moderates its completion interrupts: each notification costs the thread that moves the
     * data a call of the consumer's handler (about 1 us in the SMB Direct engine) however many
     * completions it finds.
     */
    static final int PER_STEP = 4 * 1024 * 1024;

    /** Bytes moved in this step. */
    private long moved;

    /** A step begins: nothing moved yet. */
    void begin() {
        moved = 0;
    }

    void spend(int bytes) {
        moved += bytes;
    }

    /** Whether this step has moved all it may. */
    boolean spent() {
        return moved >= PER_STEP;
    }
}
