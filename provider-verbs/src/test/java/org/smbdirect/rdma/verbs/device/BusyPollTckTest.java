package org.smbdirect.rdma.verbs.device;

import java.util.Map;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.smbdirect.rdma.tck.CompletionQueueTck;
import org.smbdirect.rdma.tck.ProviderFixture;
import org.smbdirect.rdma.tck.SendReceiveTck;

/**
 * The kit's completion rules and message traffic again with busy polling on
 * ({@code completionSpinMicroseconds}): the completion thread then takes completions without the
 * device's signal and asks for that signal only before it waits, and the NDK rules must hold all
 * the same.
 */
class BusyPollTckTest {
    /** Longer than the kit's steps take in the guest, so that most notifications come from the spin. */
    static final Map<String, Object> SPIN = Map.of("completionSpinMicroseconds", 20_000);

    /** What verbs cannot do as the kit expects; see {@link KnownDeviations}. */
    @RegisterExtension
    static final KnownDeviations DEVIATIONS = VerbsProviderTckTest.deviations();

    private final ProviderFixture fixture = new VerbsProviderTckTest.VerbsFixture(SPIN);

    /** {@link CompletionQueueTck} with busy polling. */
    @Nested
    class CompletionQueue extends CompletionQueueTck {
        @Override
        protected ProviderFixture fixture() {
            return fixture;
        }
    }

    /** {@link SendReceiveTck} with busy polling. */
    @Nested
    class SendReceive extends SendReceiveTck {
        @Override
        protected ProviderFixture fixture() {
            return fixture;
        }
    }
}
