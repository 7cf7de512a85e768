package org.smbdirect.rdma.tck;

import java.util.function.UnaryOperator;

import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.RdmaException;

/**
 * How {@link ProviderTck#link(LinkSpec)} builds a test connection. Mutable; each setter returns
 * this spec.
 */
public final class LinkSpec {
    /** Work done on a side's endpoint before it connects or accepts. */
    @FunctionalInterface
    public interface SideAction {
        /**
         * Acts on the side.
         *
         * @param side the side, not yet connected
         * @throws RdmaException when a post fails
         */
        void accept(Side side) throws RdmaException;
    }

    UnaryOperator<EndpointOptions.Builder> client = UnaryOperator.identity();
    UnaryOperator<EndpointOptions.Builder> server = UnaryOperator.identity();
    int cqDepth = 256;
    boolean sharedCq;
    byte[] connectData;
    byte[] acceptData;
    int connectIrd = -1;
    int connectOrd = -1;
    int acceptIrd = -1;
    int acceptOrd = -1;
    SideAction beforeConnect;
    SideAction beforeAccept;
    CqProbe serverRecvCq;

    /** Creates a spec with defaults: default endpoint options, queues of depth 256, IRD/ORD up to 4. */
    public LinkSpec() {
    }

    /**
     * Adjusts both sides' endpoint options.
     *
     * @param options applied to the builder after the queues are set
     * @return this
     */
    public LinkSpec options(UnaryOperator<EndpointOptions.Builder> options) {
        this.client = options;
        this.server = options;
        return this;
    }

    /**
     * Adjusts the client's endpoint options.
     *
     * @param options applied to the builder
     * @return this
     */
    public LinkSpec clientOptions(UnaryOperator<EndpointOptions.Builder> options) {
        this.client = options;
        return this;
    }

    /**
     * Adjusts the server's endpoint options.
     *
     * @param options applied to the builder
     * @return this
     */
    public LinkSpec serverOptions(UnaryOperator<EndpointOptions.Builder> options) {
        this.server = options;
        return this;
    }

    /**
     * Sets the depth of the completion queues created for the link.
     *
     * @param depth the depth
     * @return this
     */
    public LinkSpec cqDepth(int depth) {
        this.cqDepth = depth;
        return this;
    }

    /**
     * Makes each side use one completion queue for sends and receives.
     *
     * @return this
     */
    public LinkSpec sharedCq() {
        this.sharedCq = true;
        return this;
    }

    /**
     * Makes the server side report receives to an existing queue (to share it between links).
     *
     * @param probe the queue
     * @return this
     */
    public LinkSpec serverRecvCq(CqProbe probe) {
        this.serverRecvCq = probe;
        return this;
    }

    /**
     * Sets the private data of the connection request.
     *
     * @param data the bytes
     * @return this
     */
    public LinkSpec connectData(byte[] data) {
        this.connectData = data;
        return this;
    }

    /**
     * Sets the private data of the acceptance.
     *
     * @param data the bytes
     * @return this
     */
    public LinkSpec acceptData(byte[] data) {
        this.acceptData = data;
        return this;
    }

    /**
     * Sets the IRD and ORD of the connection request.
     *
     * @param ird the IRD
     * @param ord the ORD
     * @return this
     */
    public LinkSpec connectDepths(int ird, int ord) {
        this.connectIrd = ird;
        this.connectOrd = ord;
        return this;
    }

    /**
     * Sets the IRD and ORD of the acceptance.
     *
     * @param ird the IRD
     * @param ord the ORD
     * @return this
     */
    public LinkSpec acceptDepths(int ird, int ord) {
        this.acceptIrd = ird;
        this.acceptOrd = ord;
        return this;
    }

    /**
     * Runs an action on the client side while it is still idle.
     *
     * @param action for example posting receives
     * @return this
     */
    public LinkSpec beforeConnect(SideAction action) {
        this.beforeConnect = action;
        return this;
    }

    /**
     * Runs an action on the server side before it accepts.
     *
     * @param action for example posting receives
     * @return this
     */
    public LinkSpec beforeAccept(SideAction action) {
        this.beforeAccept = action;
        return this;
    }
}
