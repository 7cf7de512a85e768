/**
 * A program using SMB Direct on the module path, without an OSGi framework: the RDMA provider
 * and the transport are found through {@link java.util.ServiceLoader}.
 */
module org.smbdirect.example {
    requires org.smbdirect.rdma.api;
    requires org.smbdirect.protocol;
    requires org.smbdirect.bulk;

    uses org.smbdirect.rdma.RdmaProviderFactory;
    uses org.smbdirect.transport.SmbDirectFactory;
    uses org.smbdirect.bulk.BulkTransferFactory;
}
