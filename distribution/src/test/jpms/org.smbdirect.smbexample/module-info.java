/**
 * smbj over SMB Direct on the module path, without an OSGi framework: the product's module with
 * Bouncy Castle and the slf4j API beside it, and no separate smbj jar.
 */
module org.smbdirect.smbexample {
    requires org.smbdirect.rdma.api;
    requires org.smbdirect.protocol;
    requires org.smbdirect.smbj;

    uses org.smbdirect.rdma.RdmaProviderFactory;
    uses org.smbdirect.transport.SmbDirectFactory;
}
