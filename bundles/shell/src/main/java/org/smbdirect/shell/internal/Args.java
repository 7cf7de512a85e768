package org.smbdirect.shell.internal;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The parsed command line of one shell command: options ({@code -s 4k}, {@code --size 4k},
 * {@code --size=4k}), flags ({@code --bulk}) and positional arguments. The specification names
 * each option as {@code "s|size"} (a flag) or {@code "s|size="} (takes a value); the first long
 * name is the key.
 */
final class Args {
    private final Map<String, String> values = new HashMap<>();
    private final Set<String> flags = new HashSet<>();
    private final List<String> positional = new ArrayList<>();

    private Args() {
    }

    static Args parse(Object[] argv, String... spec) throws UsageException {
        Map<String, String> keyOf = new HashMap<>();
        Set<String> takesValue = new HashSet<>();
        for (String s : spec) {
            boolean value = s.endsWith("=");
            String names = value ? s.substring(0, s.length() - 1) : s;
            String[] parts = names.split("\\|");
            String key = parts[parts.length - 1];
            for (String p : parts) {
                keyOf.put(p.length() == 1 ? "-" + p : "--" + p, key);
            }
            if (value) {
                takesValue.add(key);
            }
        }
        Args a = new Args();
        boolean optionsEnded = false;
        String[] args = new String[argv == null ? 0 : argv.length];
        for (int i = 0; i < args.length; i++) {
            args[i] = String.valueOf(argv[i]);
        }
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (optionsEnded || !arg.startsWith("-") || arg.equals("-") || isNumber(arg)) {
                a.positional.add(arg);
                continue;
            }
            if (arg.equals("--")) {
                optionsEnded = true;
                continue;
            }
            String name = arg;
            String inline = null;
            int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 0) {
                name = arg.substring(0, eq);
                inline = arg.substring(eq + 1);
            }
            String key = keyOf.get(name);
            if (key == null) {
                throw new UsageException("unknown option " + name);
            }
            if (takesValue.contains(key)) {
                String v = inline;
                if (v == null) {
                    if (i + 1 >= args.length) {
                        throw new UsageException("option " + name + " needs a value");
                    }
                    v = args[++i];
                }
                a.values.put(key, v);
            } else {
                if (inline != null) {
                    throw new UsageException("option " + name + " takes no value");
                }
                a.flags.add(key);
            }
        }
        return a;
    }

    private static boolean isNumber(String s) {
        return s.length() > 1 && s.charAt(0) == '-' && Character.isDigit(s.charAt(1));
    }

    boolean flag(String key) {
        return flags.contains(key);
    }

    String value(String key) {
        return values.get(key);
    }

    String value(String key, String otherwise) {
        return values.getOrDefault(key, otherwise);
    }

    List<String> positional() {
        return positional;
    }

    /** The positional arguments, checking their number. */
    List<String> positional(int min, int max) throws UsageException {
        if (positional.size() < min) {
            throw new UsageException(min - positional.size() == 1 && min == 1 ? "an argument is missing"
                    : "expected at least " + min + " argument" + (min == 1 ? "" : "s") + ", got " + positional.size());
        }
        if (positional.size() > max) {
            throw new UsageException("unexpected argument '" + positional.get(max) + "'");
        }
        return positional;
    }

    long size(String key, long otherwise) throws UsageException {
        String v = values.get(key);
        return v == null ? otherwise : Units.parseSize("--" + key, v);
    }

    int integer(String key, int otherwise, int min, int max) throws UsageException {
        String v = values.get(key);
        if (v == null) {
            return otherwise;
        }
        return Units.parseInt("--" + key, v, min, max);
    }
}
