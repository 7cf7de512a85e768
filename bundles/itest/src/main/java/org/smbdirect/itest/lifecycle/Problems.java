package org.smbdirect.itest.lifecycle;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import org.osgi.framework.BundleContext;
import org.osgi.framework.FrameworkEvent;
import org.osgi.framework.FrameworkListener;
import org.osgi.framework.ServiceException;

/**
 * Everything that must not happen anywhere while bundles cycle: framework ERROR and WARNING
 * events, uncaught exceptions on any thread, and warnings or errors logged with an exception (or
 * naming an internal error) by the {@code org.smbdirect} loggers. The bundles log through
 * {@code System.Logger}, which without an installed {@code LoggerFinder} is java.util.logging.
 */
final class Problems extends Handler implements FrameworkListener, Thread.UncaughtExceptionHandler, AutoCloseable {
    private final BundleContext context;
    private final Logger logger = Logger.getLogger("org.smbdirect");
    private final Level previousLevel;
    private final Thread.UncaughtExceptionHandler previousHandler;
    private final List<String> seen = new CopyOnWriteArrayList<>();
    /** Warnings without an exception: allowed, but shown. */
    private final List<String> warnings = new CopyOnWriteArrayList<>();
    private final java.util.concurrent.atomic.AtomicLong factoryNulls = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong consumerStopping = new java.util.concurrent.atomic.AtomicLong();
    private final String consumer;

    /**
     * @param consumer the symbolic name of the bundle whose {@code getService} calls race with the
     *        cycles: see {@link #factoryNulls()}
     */
    Problems(BundleContext context, String consumer) {
        this.context = context;
        this.consumer = consumer;
        previousLevel = logger.getLevel();
        logger.setLevel(Level.WARNING); // INFO (a listener moving, ...) would fill the build log
        setLevel(Level.WARNING);
        logger.addHandler(this);
        previousHandler = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler(this);
        context.addFrameworkListener(this);
    }

    @Override
    public void frameworkEvent(FrameworkEvent event) {
        int factory = event.getType() == FrameworkEvent.ERROR && event.getBundle() != null
                && consumer.equals(event.getBundle().getSymbolicName())
                && event.getThrowable() instanceof ServiceException
                        ? ((ServiceException) event.getThrowable()).getType() : -1;
        Throwable cause = event.getThrowable() == null ? null : event.getThrowable().getCause();
        if (factory == ServiceException.FACTORY_EXCEPTION && consumerStopping(cause)) {
            // Felix SCR's service factory, called for a getService of the consumer while the
            // consumer itself is being stopped by a refresh, finds no using bundle or an invalid
            // context: the race is the consumer's own stop, and its getService saw null.
            consumerStopping.incrementAndGet();
            return;
        }
        if (factory == ServiceException.FACTORY_ERROR
                || factory == ServiceException.FACTORY_EXCEPTION && scrInternalNullPointer(cause)) {
            factoryNulls.incrementAndGet();
            return;
        }
        if (event.getType() == FrameworkEvent.ERROR || event.getType() == FrameworkEvent.WARNING) {
            seen.add("framework " + (event.getType() == FrameworkEvent.ERROR ? "ERROR" : "WARNING") + " from "
                    + event.getBundle() + ": " + event.getThrowable() + where(event.getThrowable()));
        }
    }

    @Override
    public void uncaughtException(Thread t, Throwable e) {
        seen.add("uncaught on " + t.getName() + ": " + e);
    }

    @Override
    public void publish(LogRecord r) {
        if (!isLoggable(r)) {
            return;
        }
        // only the text: a recorded exception could hold objects of a bundle being refreshed
        String text = r.getLevel() + " " + r.getLoggerName() + ": " + r.getMessage()
                + (r.getThrown() == null ? "" : " " + r.getThrown());
        if (r.getThrown() != null || String.valueOf(r.getMessage()).contains("internal error")) {
            seen.add(text);
        } else {
            warnings.add(text);
        }
    }

    /**
     * ERROR events "Service factory returned null" for the consumer's {@code getService}: Declarative
     * Services returns null when the call races with the service's bundle stopping, and the
     * framework reports that as an ERROR (OSGi Core 5.9). SCR's own exception for the same race
     * (see {@link #scrInternalNullPointer}) counts here too. Each must match a null the consumer saw.
     */
    long factoryNulls() {
        return factoryNulls.get();
    }

    /**
     * How Felix SCR 2.2.18's service factory fails when a getService races with the deactivation
     * of the service's component: SCR dereferences state it has already torn down, for example
     * the closed dependency tracker in {@code DependencyManager.open} (the FELIX-6251 family).
     * The framework then returns null to the caller, exactly as for "Service factory returned
     * null". An exception from our own code has our frame on top and is not this.
     */
    private static boolean scrInternalNullPointer(Throwable cause) {
        if (!(cause instanceof NullPointerException)) {
            return false;
        }
        StackTraceElement[] st = cause.getStackTrace();
        return st.length > 0 && st[0].getClassName().startsWith("org.apache.felix.scr.impl.manager.");
    }

    /** The first frames of the cause, so a failure names where it came from. */
    private static String where(Throwable t) {
        Throwable c = t == null || t.getCause() == null ? t : t.getCause();
        if (c == null) {
            return "";
        }
        StringBuilder b = new StringBuilder();
        StackTraceElement[] st = c.getStackTrace();
        for (int i = 0; i < Math.min(4, st.length); i++) {
            b.append("\n    at ").append(st[i]);
        }
        return b.toString();
    }

    /** How SCR's service factory fails for a getService of a bundle that is stopping. */
    private static boolean consumerStopping(Throwable cause) {
        String m = cause == null ? "" : String.valueOf(cause.getMessage());
        return cause instanceof NullPointerException && m.contains("usingBundle")
                || cause instanceof IllegalStateException && m.contains("Invalid BundleContext");
    }

    /** ERROR events of SCR's service factory failing for a getService of the consumer while it stopped. */
    long consumerStopping() {
        return consumerStopping.get();
    }

    List<String> seen() {
        return new ArrayList<>(seen);
    }

    List<String> warnings() {
        return new ArrayList<>(warnings);
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
        logger.removeHandler(this);
        logger.setLevel(previousLevel);
        Thread.setDefaultUncaughtExceptionHandler(previousHandler);
        context.removeFrameworkListener(this);
    }
}
