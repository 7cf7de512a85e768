/**
 * The provider conformance kit: abstract JUnit 5 tests that check an RDMA provider against the
 * contract of the provider API ({@link org.smbdirect.rdma}).
 *
 * <h2>Using the kit</h2>
 * A provider module adds this bundle as a test dependency, implements a {@link
 * org.smbdirect.rdma.tck.ProviderFixture} that opens its providers, and extends {@link
 * org.smbdirect.rdma.tck.RdmaProviderTck} (all areas as nested test classes) or any of the area
 * classes ({@link org.smbdirect.rdma.tck.ConnectionTck}, {@link
 * org.smbdirect.rdma.tck.SendReceiveTck}, {@link org.smbdirect.rdma.tck.ReadWriteTck}, {@link
 * org.smbdirect.rdma.tck.InvalidationTck}, {@link org.smbdirect.rdma.tck.RegistrationTck}, {@link
 * org.smbdirect.rdma.tck.CompletionQueueTck}, {@link org.smbdirect.rdma.tck.CapabilityTck}, {@link
 * org.smbdirect.rdma.tck.MisuseTck}) with a method that returns the fixture.
 *
 * <h2>Timing</h2>
 * No test sleeps for a fixed time to let something happen: tests wait for events and completions
 * with generous time limits ({@link org.smbdirect.rdma.tck.Tck#timeout()}), scaled by the system
 * property {@value org.smbdirect.rdma.tck.Tck#TIMEOUT_FACTOR_PROPERTY} for slow machines and
 * emulators. A check that something does <em>not</em> happen uses an ordering barrier where the
 * contract gives one (for example, completions of one queue come in posted order).
 *
 * <h2>Invariants checked after every test</h2>
 * Every {@link org.smbdirect.rdma.tck.EventRecorder} and {@link org.smbdirect.rdma.tck.CqProbe}
 * created through the kit is checked when the test ends: connection events of an endpoint were
 * never delivered concurrently, never on the test's thread (from within a call it made) and never
 * after a terminal event; notification callbacks of a queue were never concurrent and never on the
 * test's thread.
 */
@Version("1.0.0")
@Export
package org.smbdirect.rdma.tck;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
