package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectListener;

/**
 * MS-SMBD 3.1.4.5 and 3.1.4.6 through the pool of local registrations: an RDMA operation on a
 * buffer used before costs one post and one completion, no registration.
 */
class PooledRegistrationTest {
    private Fixture fx;
    private RdmaProvider serverSide;
    private RdmaProvider clientSide;
    /** Every {@link Endpoint#register} the client's provider was asked for. */
    private final AtomicLong registrations = new AtomicLong();

    @BeforeEach
    void setUp() throws Exception {
        fx = new Fixture();
        serverSide = fx.provider();
        clientSide = counting(fx.provider());
    }

    @AfterEach
    void tearDown() {
        fx.close();
    }

    /** The provider, with every endpoint it creates counting its registrations. */
    private RdmaProvider counting(RdmaProvider p) {
        return (RdmaProvider) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {RdmaProvider.class},
                (proxy, m, args) -> {
                    Object r = invoke(p, m, args);
                    if (r instanceof Endpoint) {
                        Endpoint ep = (Endpoint) r;
                        return Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Endpoint.class},
                                (p2, m2, a2) -> {
                                    if (m2.getName().equals("register")) {
                                        registrations.incrementAndGet();
                                    }
                                    return invoke(ep, m2, a2);
                                });
                    }
                    return r;
                });
    }

    private static Object invoke(Object target, Method m, Object[] args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    @Test
    void rdmaRead_100000ReadsOf4KiB_noProviderRegistrationAfterWarmUp() throws Exception {
        SmbDirectTransport server = fx.transport(SmbDirectConfig.defaults(), serverSide);
        SmbDirectTransport client = fx.transport(SmbDirectConfig.defaults(), clientSide);
        Recorder serverUpper = new Recorder();
        SmbDirectListener l = server.listen(fx.anyAddress(serverSide), serverUpper);
        SmbDirectConnection c = client.connect(l.localAddress(), new Recorder(), Fixture.TIMEOUT);
        SmbDirectConnection s = serverUpper.connection();
        ByteBuffer exposed = ByteBuffer.allocateDirect(4096);
        for (int i = 0; i < 4096; i++) {
            exposed.put(i, (byte) (i * 7));
        }
        RegisteredBuffer reg = s.register(exposed, RemoteAccess.READ);
        List<BufferDescriptorV1> remote = reg.descriptors();
        ByteBuffer local = ByteBuffer.allocateDirect(4096);
        Semaphore window = new Semaphore(8);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        for (int warmUp = 0; warmUp < 100; warmUp++) {
            Fixture.get(c.rdmaRead(local, remote, 0).toCompletableFuture());
        }
        long afterWarmUp = registrations.get();
        long poolBefore = Fixture.impl(c).engine().localRegistrationsMade();
        for (int i = 0; i < 100_000 && failure.get() == null; i++) {
            assertTrue(window.tryAcquire(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS), "a read never completed");
            c.rdmaRead(local, remote, 0).whenComplete((v, t) -> {
                if (t != null) {
                    failure.compareAndSet(null, t);
                }
                window.release();
            });
        }
        assertTrue(window.tryAcquire(8, Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));
        assertEquals(null, failure.get());
        assertEquals(afterWarmUp, registrations.get(), "provider registrations during 100,000 reads");
        assertEquals(poolBefore, Fixture.impl(c).engine().localRegistrationsMade());
        assertEquals(100_100, c.statistics().rdmaReads());
        for (int i = 0; i < 4096; i++) {
            assertEquals((byte) (i * 7), local.get(i));
        }
        // A buffer not seen before is registered once, then reused too.
        ByteBuffer other = ByteBuffer.allocateDirect(4096);
        CompletableFuture.allOf(c.rdmaRead(other, remote, 0).toCompletableFuture(),
                c.rdmaRead(other, remote, 0).toCompletableFuture()).get(5, TimeUnit.SECONDS);
        assertEquals(afterWarmUp + 1, registrations.get());
        reg.close();
    }
}
