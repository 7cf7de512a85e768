package org.smbdirect.smbexample;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.TimeUnit;

import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaProviderFactory;
import org.smbdirect.smbj.SmbjOptions;
import org.smbdirect.smbj.SmbjTransport;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectFactory;

import com.hierynomus.smbj.SMBClient;

/**
 * smbj with the SMB Direct transport on the simulated fabric, where no SMB server listens: smbj,
 * its crypto (Bouncy Castle) and the transport load and link as modules, and the connection fails
 * with the transport's explanation.
 */
public final class Main {
    public static void main(String[] args) throws Exception {
        RdmaProviderFactory sim = ServiceLoader.load(RdmaProviderFactory.class).stream()
                .map(ServiceLoader.Provider::get).filter(f -> f.type().equals("sim")).findFirst().orElseThrow();
        List<RdmaProvider> providers = sim.create(Map.of("fabric", "jpms-smb-example"));
        try (SmbDirect transport = ServiceLoader.load(SmbDirectFactory.class).findFirst().orElseThrow()
                .create(providers, SmbDirectConfig.defaults())) {
            SmbjTransport smbj = SmbjTransport.create(transport, SmbjOptions.defaults());
            System.out.println("smbj transport in module " + smbj.getClass().getModule().getName());
            try (SMBClient client = new SMBClient(smbj.configBuilder().withTimeout(10, TimeUnit.SECONDS).build())) {
                client.connect(providers.get(0).addresses().get(0).getHostAddress());
                System.out.println("connected, unexpectedly");
            } catch (IOException expected) {
                System.out.println("smbj: " + expected.getMessage());
            }
            System.out.println(smbj.statistics());
        } finally {
            providers.get(0).close();
        }
        System.out.println("JPMS smbj example OK");
    }
}
