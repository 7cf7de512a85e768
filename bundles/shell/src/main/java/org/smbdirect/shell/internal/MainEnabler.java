package org.smbdirect.shell.internal;

import org.osgi.service.component.ComponentContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;

/**
 * Enables {@link Main} only in the executable distribution (framework property {@value
 * Main#DISTRIBUTION} true). Elsewhere {@code Main} stays disabled rather than waiting forever for the
 * bnd launcher's service, which Karaf's {@code bundle:list} would report as {@code Waiting}.
 */
@Component(service = {})
public final class MainEnabler {

    /**
     * Enables the main thread's component where the distribution asks for it.
     *
     * @param context the component's context
     */
    @Activate
    public MainEnabler(ComponentContext context) {
        if (Boolean.parseBoolean(context.getBundleContext().getProperty(Main.DISTRIBUTION))) {
            context.enableComponent(Main.class.getName());
        }
    }
}
