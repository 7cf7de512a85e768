package org.smbdirect.shell.internal;

import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.Hashtable;
import java.util.concurrent.Callable;
import java.util.logging.Level;
import java.util.logging.Logger;

import org.apache.felix.service.command.CommandProcessor;
import org.apache.felix.service.command.CommandSession;
import org.apache.felix.service.command.Descriptor;
import org.osgi.framework.BundleContext;
import org.osgi.framework.ServiceReference;
import org.osgi.framework.ServiceRegistration;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Reference;

/**
 * The main thread of the executable distribution. The bnd launcher of {@code smbdirect.jar}
 * registers itself with the command line ({@code launcher.arguments}) and calls the
 * {@code main.thread} service it finds; its return value is the process's exit status. The
 * component registers that service only when the framework property {@value #DISTRIBUTION} is
 * {@code true}, which the distribution's bndrun sets: other frameworks started by the same
 * launcher (bnd's tester, a test bndrun that holds this bundle) keep their main thread. The
 * component is disabled unless {@link MainEnabler} finds that property: in Karaf or a plain Felix
 * an enabled but unsatisfied component would make the bundle show as {@code Waiting}.
 *
 * <ul>
 * <li>no arguments: the interactive Gogo shell on the terminal; {@code exit} or end of input
 * leaves it (status 0);</li>
 * <li>{@code demo [options]}: the demo (status 0 passed, 1 failed, 2 wrong arguments);</li>
 * <li>{@code -c COMMAND...}: one Gogo command line; {@code SCRIPT [args]}: a Gogo script.</li>
 * </ul>
 */
@Component(service = {}, enabled = false)
public final class Main implements Callable<Integer> {
    /** The framework property by which the distribution's launch asks for this main thread. */
    static final String DISTRIBUTION = "smbdirect.main";
    /** Set {@code -Dsmbdirect.log.level=INFO} (a java.util.logging level) to see the bundles' log. */
    static final String LOG_LEVEL = "smbdirect.log.level";
    // held so that java.util.logging keeps the level (it references loggers weakly)
    private static final Logger LOG_ROOT = Logger.getLogger("org.smbdirect");

    static final String USAGE = "usage: java -jar smbdirect.jar [demo [--size SIZE] [--capture PATH | --no-capture]"
            + " [--timeout SECONDS] | -c COMMAND... | SCRIPT [ARGS...]]\n"
            + "  (no arguments)  the interactive Gogo shell; 'help' lists the commands, 'exit' leaves\n"
            + "  demo            the non-interactive demo; exit status 0 when it passed\n"
            + "  -c COMMAND...   run one Gogo command line and exit\n"
            + "  SCRIPT          run a Gogo script file and exit";

    private final BundleContext context;
    private final String[] arguments;
    private final CommandProcessor processor;
    private final SmbDirectCommands commands;
    private final ServiceRegistration<?> registration;

    /**
     * Creates the main thread and offers it to the launcher when this is the distribution.
     *
     * @param context the bundle's context (to register {@code exit})
     * @param launcher the bnd launcher's service, carrying the command line
     * @param processor Gogo
     * @param commands the smbdirect commands (the demo)
     */
    @Activate
    public Main(BundleContext context,
            @Reference(service = Object.class, target = "(launcher.arguments=*)") ServiceReference<Object> launcher,
            @Reference CommandProcessor processor, @Reference SmbDirectCommands commands) {
        this.context = context;
        Object args = launcher.getProperty("launcher.arguments");
        this.arguments = args instanceof String[] ? (String[]) args : new String[0];
        this.processor = processor;
        this.commands = commands;
        if (Boolean.parseBoolean(context.getProperty(DISTRIBUTION))) {
            Hashtable<String, Object> props = new Hashtable<>();
            props.put("main.thread", "true");
            registration = context.registerService(Callable.class, this, props);
        } else {
            registration = null;
        }
    }

    /** Withdraws the main thread (the launcher ends the framework when it returns). */
    @Deactivate
    void deactivate() {
        if (registration != null) {
            registration.unregister();
        }
    }

    @Override
    public Integer call() throws Exception {
        String[] args = arguments;
        // the process's own streams: System.out/err may be Gogo's per-thread redirections, which a
        // session must not write to (they would lead back to the session)
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true);
        PrintStream err = new PrintStream(new FileOutputStream(FileDescriptor.err), true);
        String level = System.getProperty(LOG_LEVEL);
        try {
            LOG_ROOT.setLevel(level == null ? Level.WARNING : Level.parse(level));
        } catch (IllegalArgumentException e) {
            err.println("ignoring -D" + LOG_LEVEL + "=" + level + ": not a java.util.logging level");
            LOG_ROOT.setLevel(Level.WARNING);
        }
        if (args.length > 0 && args[0].equals("demo")) {
            return commands.runDemo(out, Arrays.copyOfRange(args, 1, args.length));
        }
        if (args.length > 0 && (args[0].equals("-h") || args[0].equals("--help") || args[0].equals("help"))) {
            out.println(USAGE);
            return 0;
        }
        if (args.length > 0 && args[0].startsWith("-") && !args[0].equals("-c")) {
            err.println("error: unknown option " + args[0]);
            err.println(USAGE);
            return 2;
        }
        ExitableInput in = new ExitableInput(new FileInputStream(FileDescriptor.in));
        CommandSession session = processor.createSession(in, out, err);
        Hashtable<String, Object> props = new Hashtable<>();
        props.put(CommandProcessor.COMMAND_SCOPE, "smbdirect");
        props.put(CommandProcessor.COMMAND_FUNCTION, new String[] {"exit"});
        ServiceRegistration<?> exit = context.registerService(Object.class.getName(), new ExitCommand(in), props);
        try {
            if (args.length == 0) {
                out.println("smbdirect " + context.getBundle().getVersion() + ": SMB Direct (MS-SMBD) for the JVM, on Apache Felix "
                        + context.getBundle(0).getVersion() + ". 'help' lists the commands ('help demo' explains one),"
                        + " 'exit' leaves.");
                session.execute("gosh --login --noshutdown");
            } else if (args[0].equals("-c")) {
                if (args.length < 2) {
                    err.println("error: -c needs a command");
                    return 2;
                }
                Object result = session.execute(String.join(" ", Arrays.copyOfRange(args, 1, args.length)));
                if (result != null) {
                    out.println(session.format(result, org.apache.felix.service.command.Converter.INSPECT));
                }
            } else {
                StringBuilder line = new StringBuilder("gosh --noshutdown");
                for (String a : args) {
                    line.append(" '").append(a.replace("'", "\\'")).append('\'');
                }
                session.execute(line);
            }
            return in.exitStatus();
        } catch (Exception e) {
            err.println("error: " + Transfer.describe(e));
            if (Boolean.getBoolean("smbdirect.debug")) {
                e.printStackTrace(err);
            }
            return 1;
        } finally {
            exit.unregister();
            session.close();
        }
    }

    /** Standard input that reports its end once {@code exit} was given. */
    static final class ExitableInput extends InputStream {
        private final InputStream in;
        private volatile boolean exited;
        private volatile int status;

        ExitableInput(InputStream in) {
            this.in = in;
        }

        void exit(int code) {
            status = code;
            exited = true;
        }

        int exitStatus() {
            return status;
        }

        @Override
        public int read() throws IOException {
            return exited ? -1 : in.read();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            return exited ? -1 : in.read(b, off, len);
        }

        @Override
        public int available() throws IOException {
            return exited ? 0 : in.available();
        }
    }

    /** The {@code exit} command of the executable jar's shell. */
    public static final class ExitCommand {
        private final ExitableInput in;

        ExitCommand(ExitableInput in) {
            this.in = in;
        }

        /**
         * Leaves the shell and the program.
         *
         * @param session the session
         * @param args an optional exit status
         */
        @Descriptor("leave the shell and stop the program")
        public void exit(CommandSession session, @Descriptor("[STATUS]") String[] args) {
            int status = 0;
            if (args.length > 1) {
                System.out.println("error: unexpected argument '" + args[1] + "'");
                System.out.println("usage: exit [STATUS]");
                return;
            }
            if (args.length == 1) {
                try {
                    status = Units.parseInt("STATUS", args[0], 0, 255);
                } catch (UsageException e) {
                    System.out.println("error: " + e.getMessage());
                    System.out.println("usage: exit [STATUS]");
                    return;
                }
            }
            in.exit(status);
        }
    }
}
