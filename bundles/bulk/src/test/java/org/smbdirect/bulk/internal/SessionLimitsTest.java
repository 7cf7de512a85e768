package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The session's limits from both HELLOs and the connection's parameters, as a table. */
class SessionLimitsTest {

    /**
     * Inputs: localRead peerRead localMaxReadWrite peerMaxReadWrite maxFragmentedSend maxSend
     * inlineThreshold localMaxMessage peerMaxMessage. Expected: useRead rdmaChunk inlineLimit
     * firstPartRead firstPartWrite sendLimit.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        // one 1364-byte SMB Direct message less the 24-byte Data Transfer header and the 24-byte
        // control header is 1316 bytes; less a 16-byte descriptor 1300
        "Windows defaults on both sides | true true 1048576 1048576 1048576 1364 65536 1073741824 268435456"
            + " | true 1048576 65536 1300 1316 268435456",
        "the peer cannot RDMA Read: WRITE path | true false 1048576 1048576 1048576 1364 65536 1048576 1048576"
            + " | false 1048576 65536 1300 1316 1048576",
        "this side cannot register for reading: WRITE path | false true 1048576 1048576 1048576 1364 65536 1048576 1048576"
            + " | false 1048576 65536 1300 1316 1048576",
        "the smaller MaxReadWriteSize | true true 1048576 65536 1048576 1364 65536 1048576 1048576"
            + " | true 65536 65536 1300 1316 1048576",
        "a peer without RDMA | true true 1048576 0 1048576 1364 65536 1048576 1048576"
            + " | true 0 65536 1300 1316 1048576",
        "the threshold caps inline sends and first parts | true true 1048576 1048576 1048576 1364 1000 1048576 1048576"
            + " | true 1048576 1000 1000 1000 1048576",
        "no room for data in a control message | true true 1048576 1048576 20 1364 65536 1048576 1048576"
            + " | true 1048576 0 0 0 1048576",
        "no room for data beside a descriptor | true true 1048576 1048576 1048576 60 65536 1048576 1048576"
            + " | true 1048576 65536 0 12 1048576",
    })
    void limits_asTheTableSays(String name, String inputs, String expected) {
        String[] in = inputs.trim().split(" ");
        String[] out = expected.trim().split(" ");
        Hello peer = new Hello(Boolean.parseBoolean(in[1]), 4, Integer.parseInt(in[8]), Integer.parseInt(in[3]), 8);
        SessionLimits limits = SessionLimits.of(Boolean.parseBoolean(in[0]), Integer.parseInt(in[2]),
                Integer.parseInt(in[4]), Integer.parseInt(in[5]), peer, Integer.parseInt(in[6]), Integer.parseInt(in[7]));
        assertEquals(new SessionLimits(Boolean.parseBoolean(out[0]), Integer.parseInt(out[1]), Integer.parseInt(out[2]),
                Integer.parseInt(out[3]), Integer.parseInt(out[4]), Integer.parseInt(in[4]), Integer.parseInt(out[5])),
                limits);
    }
}
