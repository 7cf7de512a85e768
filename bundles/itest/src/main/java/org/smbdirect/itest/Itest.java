package org.smbdirect.itest;

/** Names shared by the tests. */
final class Itest {
    /** The transport's configuration PID. */
    static final String PROTOCOL_PID = "org.smbdirect.protocol";
    /** The simulated provider's configuration and factory PID. */
    static final String SIM_PID = "org.smbdirect.rdma.sim";
    /** The simulated provider's bundle. */
    static final String SIM_BUNDLE = "org.smbdirect.rdma.sim";

    private Itest() {
    }
}
