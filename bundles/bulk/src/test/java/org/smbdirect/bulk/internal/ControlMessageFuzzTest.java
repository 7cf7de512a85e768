package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;

import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * Fuzzes the decoder of the bulk layer's control messages. Properties: a message is either
 * refused with {@link MalformedMessageException} naming the problem, or decoded, in which case
 * encoding what was decoded gives back exactly the bytes received, and a HELLO's body either
 * decodes or is refused the same way. Nothing else may be thrown.
 *
 * <p>In the normal build this replays the committed inputs ({@code ControlMessageFuzzTestInputs});
 * with {@code JAZZER_FUZZ=1} it fuzzes; {@code tools/fuzz.sh bulk <seconds>} runs it for long.
 */
class ControlMessageFuzzTest {

    @FuzzTest(maxDuration = "40s")
    void decode(byte[] input) {
        fuzzerTestOneInput(input);
    }

    /**
     * The fuzz target, also for Jazzer's standalone runner.
     *
     * @param input the fuzzer's bytes
     */
    public static void fuzzerTestOneInput(byte[] input) {
        ControlMessage m;
        try {
            m = ControlMessage.decode(ByteBuffer.wrap(input));
        } catch (MalformedMessageException refused) {
            return;
        }
        ByteBuffer again = ControlMessage.encode(m.type, m.flags, m.sequence, m.totalLength, m.descriptors,
                m.inline);
        assertEquals(ByteBuffer.wrap(input), again, "decode then encode changed the message: " + m);
        if (m.type == ControlMessage.Type.HELLO) {
            try {
                m.hello().toString();
            } catch (MalformedMessageException refused) {
                // a readable refusal is the contract
            }
        }
        m.toString();
    }
}
