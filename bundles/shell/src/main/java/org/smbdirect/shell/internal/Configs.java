package org.smbdirect.shell.internal;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Dictionary;
import java.util.Enumeration;
import java.util.Hashtable;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.InvalidSyntaxException;
import org.osgi.framework.ServiceRegistration;
import org.osgi.service.cm.Configuration;
import org.osgi.service.cm.ConfigurationAdmin;
import org.osgi.service.cm.ConfigurationEvent;
import org.osgi.service.cm.ConfigurationListener;
import org.osgi.service.metatype.AttributeDefinition;
import org.osgi.service.metatype.MetaTypeInformation;
import org.osgi.service.metatype.MetaTypeService;
import org.osgi.service.metatype.ObjectClassDefinition;

/**
 * Configuration Admin as the shell uses it: the simulated providers (PID and factory PID
 * {@value #SIM_PID}) and the transport (PID {@value #PROTOCOL_PID}, its {@code provider.target}).
 *
 * <p>Declarative Services configures the sim component from its factory configurations when there
 * are any (one provider each; the unconfigured default provider gives way), otherwise from the
 * singleton configuration. Settings for "the providers" therefore go to every factory
 * configuration, or to the singleton one when there is none.
 */
final class Configs {
    static final String SIM_PID = "org.smbdirect.rdma.sim";
    /** A configuration no component uses: its event marks that the events before it were handled. */
    static final String FENCE_PID = "org.smbdirect.shell.fence";
    static final String SIM_BUNDLE = "org.smbdirect.rdma.sim";
    static final String PROTOCOL_PID = "org.smbdirect.protocol";
    static final String PROVIDER_TARGET = "provider.target";
    static final String ANY_PROVIDER = "(provider.type=*)";

    private final ConfigurationAdmin admin;
    private final MetaTypeService metatype;
    private final BundleContext context;

    Configs(ConfigurationAdmin admin, MetaTypeService metatype, BundleContext context) {
        this.admin = admin;
        this.metatype = metatype;
        this.context = context;
    }

    /** The factory configurations of simulated providers. */
    List<Configuration> simFactoryConfigurations() throws IOException {
        try {
            Configuration[] c = admin.listConfigurations("(service.factoryPid=" + SIM_PID + ")");
            List<Configuration> list = new ArrayList<>();
            if (c != null) {
                Collections.addAll(list, c);
            }
            return list;
        } catch (InvalidSyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The factory configuration whose provider has this name, or {@code null}. */
    Configuration simConfiguration(String name) throws IOException {
        for (Configuration c : simFactoryConfigurations()) {
            Dictionary<String, Object> p = c.getProperties();
            if (p != null && name.equals(String.valueOf(p.get("name")))) {
                return c;
            }
        }
        return null;
    }

    /** The singleton configuration of the unconfigured provider, created on demand. */
    Configuration simSingleton() throws IOException {
        return admin.getConfiguration(SIM_PID, "?");
    }

    /**
     * The configurations that decide the settings of the simulated providers: the named provider's
     * factory configuration, every factory configuration, or the singleton one when there is none.
     *
     * @throws UsageException when a provider name is given that has no configuration of its own
     */
    List<Configuration> simTargets(String name) throws IOException, UsageException {
        List<Configuration> factory = simFactoryConfigurations();
        if (name != null) {
            Configuration c = simConfiguration(name);
            if (c != null) {
                return List.of(c);
            }
            if (!factory.isEmpty()) {
                throw new UsageException("no simulated provider named " + name + " is configured");
            }
            // the unconfigured default provider: its settings are the singleton configuration's
        }
        return factory.isEmpty() ? List.of(simSingleton()) : factory;
    }

    /**
     * Creates a provider's factory configuration (named after the provider). SCR does not accept
     * factory configurations while the singleton one exists, so that one (settings of the
     * unconfigured default provider, which gives way anyway) is deleted first.
     *
     * @return the deleted singleton configuration's properties, or {@code null} when there was none
     */
    Dictionary<String, Object> createSim(String name, Map<String, Object> settings) throws IOException {
        Dictionary<String, Object> dropped = dropSimSingleton();
        Configuration c = admin.getFactoryConfiguration(SIM_PID, name, "?");
        Map<String, Object> all = new LinkedHashMap<>(settings);
        all.put("name", name);
        update(c, all);
        return dropped;
    }

    /** Deletes the singleton configuration of the sim component, returning its properties. */
    Dictionary<String, Object> dropSimSingleton() throws IOException {
        try {
            Configuration[] c = admin.listConfigurations("(service.pid=" + SIM_PID + ")");
            if (c == null || c.length == 0) {
                return null;
            }
            Dictionary<String, Object> p = c[0].getProperties();
            // SCR refuses factory configurations while it still holds the singleton one, and when it
            // handles the singleton's deletion it first looks for other configurations of the PID:
            // a factory configuration made before SCR has seen the deletion is taken while the
            // singleton is still held ("already supplied as a singleton", one shell session in
            // fifteen). Configuration Admin hands each event to every listener before the next, so
            // once this listener sees a later event (the fence's), SCR has handled the deletion.
            CountDownLatch fenced = new CountDownLatch(1);
            ConfigurationListener l = e -> {
                if (e.getType() == ConfigurationEvent.CM_UPDATED && FENCE_PID.equals(e.getPid())) {
                    fenced.countDown();
                }
            };
            ServiceRegistration<ConfigurationListener> reg = context.registerService(ConfigurationListener.class, l,
                    null);
            Configuration fence = null;
            try {
                c[0].delete();
                fence = admin.getConfiguration(FENCE_PID, "?");
                fence.update(new Hashtable<>(Map.of("purpose", "orders the shell after SCR's handling of "
                        + SIM_PID + "'s deletion")));
                if (!fenced.await(10, TimeUnit.SECONDS)) {
                    throw new IOException("the deletion of configuration " + SIM_PID + " was not dispatched within 10 s");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while deleting configuration " + SIM_PID, e);
            } finally {
                reg.unregister();
                if (fence != null) {
                    fence.delete();
                }
            }
            return p;
        } catch (InvalidSyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Recreates the singleton configuration with earlier properties (after the last factory
     * configuration is gone).
     */
    void restoreSimSingleton(Dictionary<String, Object> properties) throws IOException {
        if (properties == null) {
            return;
        }
        Hashtable<String, Object> p = new Hashtable<>();
        for (Enumeration<String> keys = properties.keys(); keys.hasMoreElements();) {
            String k = keys.nextElement();
            if (!k.equals("service.pid") && !k.equals("service.factoryPid") && !k.equals("service.bundleLocation")) {
                p.put(k, properties.get(k));
            }
        }
        simSingleton().update(p);
    }

    /** Merges changes into a configuration ({@code null} values remove keys) and updates it. */
    static void update(Configuration c, Map<String, ?> changes) throws IOException {
        Dictionary<String, Object> old = c.getProperties();
        Hashtable<String, Object> p = new Hashtable<>();
        if (old != null) {
            for (Enumeration<String> keys = old.keys(); keys.hasMoreElements();) {
                String k = keys.nextElement();
                p.put(k, old.get(k));
            }
        }
        for (Map.Entry<String, ?> e : changes.entrySet()) {
            if (e.getValue() == null) {
                p.remove(e.getKey());
            } else {
                p.put(e.getKey(), e.getValue());
            }
        }
        c.update(p);
    }

    static Object get(Configuration c, String key) {
        Dictionary<String, Object> p = c.getProperties();
        return p == null ? null : p.get(key);
    }

    /** The transport's configuration. */
    Configuration protocol() throws IOException {
        return admin.getConfiguration(PROTOCOL_PID, "?");
    }

    String providerTarget() throws IOException {
        Object t = get(protocol(), PROVIDER_TARGET);
        return t == null ? ANY_PROVIDER : t.toString();
    }

    void setProviderTarget(String filter) throws IOException {
        Map<String, Object> change = new LinkedHashMap<>();
        change.put(PROVIDER_TARGET, filter);
        update(protocol(), change);
    }

    /**
     * Converts {@code key=value} settings of a simulated provider to typed values, checked against
     * its metatype (when the Metatype service is there): an unknown key or an invalid value is
     * refused with the key, the value and what is allowed.
     */
    Map<String, Object> simSettings(List<String> assignments) throws UsageException {
        Map<String, AttributeDefinition> ads = simAttributes();
        Map<String, Object> out = new LinkedHashMap<>();
        for (String a : assignments) {
            int eq = a.indexOf('=');
            if (eq <= 0) {
                throw new UsageException("'" + a + "' is not a setting: write key=value, e.g. rdmaRead=false");
            }
            String key = a.substring(0, eq).trim();
            String value = a.substring(eq + 1).trim();
            if (key.equals("name")) {
                throw new UsageException("the name is the provider's: give it as the NAME argument");
            }
            if (ads == null) {
                out.put(key, value);
                continue;
            }
            AttributeDefinition ad = ads.get(key);
            if (ad == null) {
                throw new UsageException("unknown setting '" + key + "'; known: " + String.join(", ", ads.keySet()));
            }
            String problem = ad.validate(value);
            if (problem != null && !problem.isEmpty()) {
                throw new UsageException(key + "=" + value + ": " + problem);
            }
            out.put(key, typed(key, value, ad.getType()));
        }
        return out;
    }

    private static Object typed(String key, String value, int type) throws UsageException {
        try {
            switch (type) {
                case AttributeDefinition.BOOLEAN:
                    if (!value.equalsIgnoreCase("true") && !value.equalsIgnoreCase("false")) {
                        throw new NumberFormatException();
                    }
                    return Boolean.valueOf(value);
                case AttributeDefinition.INTEGER:
                    return Integer.valueOf(value);
                case AttributeDefinition.LONG:
                    return Long.valueOf(value);
                case AttributeDefinition.DOUBLE:
                    return Double.valueOf(value);
                default:
                    return value;
            }
        } catch (NumberFormatException e) {
            throw new UsageException(key + "=" + value + ": not a valid " + typeName(type));
        }
    }

    private static String typeName(int type) {
        switch (type) {
            case AttributeDefinition.BOOLEAN:
                return "boolean (true or false)";
            case AttributeDefinition.INTEGER:
            case AttributeDefinition.LONG:
                return "whole number";
            case AttributeDefinition.DOUBLE:
                return "number";
            default:
                return "value";
        }
    }

    /** The sim's attribute definitions by key, or {@code null} without Metatype or the bundle. */
    private Map<String, AttributeDefinition> simAttributes() {
        if (metatype == null) {
            return null;
        }
        for (Bundle b : context.getBundles()) {
            if (SIM_BUNDLE.equals(b.getSymbolicName())) {
                MetaTypeInformation info = metatype.getMetaTypeInformation(b);
                if (info == null) {
                    return null;
                }
                ObjectClassDefinition ocd = info.getObjectClassDefinition(SIM_PID, null);
                if (ocd == null) {
                    return null;
                }
                Map<String, AttributeDefinition> m = new LinkedHashMap<>();
                for (AttributeDefinition ad : ocd.getAttributeDefinitions(ObjectClassDefinition.ALL)) {
                    if (!ad.getID().equals("name")) {
                        m.put(ad.getID(), ad);
                    }
                }
                return m;
            }
        }
        return null;
    }
}
