package org.smbdirect.rdma.tck;

import org.junit.jupiter.api.Nested;

/**
 * The whole kit in one class: extend it, return the fixture, and every area runs as a nested
 * test class.
 *
 * <pre>
 * class MyProviderTckTest extends RdmaProviderTck {
 *     protected ProviderFixture fixture() { return new MyFixture(); }
 * }
 * </pre>
 */
public abstract class RdmaProviderTck {

    /** For subclasses. */
    protected RdmaProviderTck() {
    }

    /**
     * The provider module's fixture, shared by every area.
     *
     * @return the fixture
     */
    protected abstract ProviderFixture fixture();

    /** {@link ConnectionTck} with this class's fixture. */
    @Nested
    public class Connection extends ConnectionTck {
        /** Created by JUnit. */
        public Connection() {
        }

        @Override
        protected ProviderFixture fixture() {
            return RdmaProviderTck.this.fixture();
        }
    }

    /** {@link SendReceiveTck} with this class's fixture. */
    @Nested
    public class SendReceive extends SendReceiveTck {
        /** Created by JUnit. */
        public SendReceive() {
        }

        @Override
        protected ProviderFixture fixture() {
            return RdmaProviderTck.this.fixture();
        }
    }

    /** {@link ReadWriteTck} with this class's fixture. */
    @Nested
    public class ReadWrite extends ReadWriteTck {
        /** Created by JUnit. */
        public ReadWrite() {
        }

        @Override
        protected ProviderFixture fixture() {
            return RdmaProviderTck.this.fixture();
        }
    }

    /** {@link InvalidationTck} with this class's fixture. */
    @Nested
    public class Invalidation extends InvalidationTck {
        /** Created by JUnit. */
        public Invalidation() {
        }

        @Override
        protected ProviderFixture fixture() {
            return RdmaProviderTck.this.fixture();
        }
    }

    /** {@link RegistrationTck} with this class's fixture. */
    @Nested
    public class Registration extends RegistrationTck {
        /** Created by JUnit. */
        public Registration() {
        }

        @Override
        protected ProviderFixture fixture() {
            return RdmaProviderTck.this.fixture();
        }
    }

    /** {@link CompletionQueueTck} with this class's fixture. */
    @Nested
    public class CompletionQueues extends CompletionQueueTck {
        /** Created by JUnit. */
        public CompletionQueues() {
        }

        @Override
        protected ProviderFixture fixture() {
            return RdmaProviderTck.this.fixture();
        }
    }

    /** {@link CapabilityTck} with this class's fixture. */
    @Nested
    public class Capabilities extends CapabilityTck {
        /** Created by JUnit. */
        public Capabilities() {
        }

        @Override
        protected ProviderFixture fixture() {
            return RdmaProviderTck.this.fixture();
        }
    }

    /** {@link MisuseTck} with this class's fixture. */
    @Nested
    public class Misuse extends MisuseTck {
        /** Created by JUnit. */
        public Misuse() {
        }

        @Override
        protected ProviderFixture fixture() {
            return RdmaProviderTck.this.fixture();
        }
    }
}
