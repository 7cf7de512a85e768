package org.smbdirect.itest;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Records what a logger and its children log. The bundles log through {@code System.Logger}, which
 * without an installed {@code LoggerFinder} is java.util.logging, shared by the whole JVM.
 */
final class Logs extends Handler implements AutoCloseable {
    private final Logger logger;
    private final Level previous;
    final List<LogRecord> records = new CopyOnWriteArrayList<>();

    Logs(String name, Level level) {
        logger = Logger.getLogger(name);
        previous = logger.getLevel();
        logger.setLevel(level);
        setLevel(level);
        logger.addHandler(this);
    }

    @Override
    public void publish(LogRecord r) {
        if (isLoggable(r)) {
            records.add(r);
        }
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
        logger.removeHandler(this);
        logger.setLevel(previous);
    }
}
