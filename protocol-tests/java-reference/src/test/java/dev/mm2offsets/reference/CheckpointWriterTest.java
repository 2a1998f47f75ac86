package dev.mm2offsets.reference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.Checkpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckpointWriterTest {
  private static final HexFormat HEX = HexFormat.of();

  @Test
  void encodesTheCheckpointExampleFromTheSpec() {
    // Checkpoint(group="g", tp=("t",0), upstream=7, downstream=8, metadata="m")
    assertEquals("00016700017400000000", HEX.formatHex(CheckpointWriter.checkpointKey("g", "t", 0)));
    assertEquals("0000" + "0000000000000007" + "0000000000000008" + "00016d",
        HEX.formatHex(CheckpointWriter.checkpointValue(7, 8, "m")));
  }

  @Test
  void kafkasOwnDecoderReadsWhatWeWrite() {
    byte[] key = CheckpointWriter.checkpointKey("grüppe \"1\"", "primary.orders", 42);
    byte[] value = CheckpointWriter.checkpointValue(100, 99, "métadonnée");
    Checkpoint decoded =
        Checkpoint.deserializeRecord(new ConsumerRecord<>("primary.checkpoints.internal", 0, 0L, key, value));
    assertEquals("grüppe \"1\"", decoded.consumerGroupId());
    assertEquals(new TopicPartition("primary.orders", 42), decoded.topicPartition());
    assertEquals(100, decoded.upstreamOffset());
    assertEquals(99, decoded.downstreamOffset());
    assertEquals("métadonnée", decoded.metadata());
  }

  @Test
  void parsesCpLinesWithEscapesRawLinesAndSkipsComments(@TempDir Path dir) throws Exception {
    Path input = dir.resolve("in.tsv");
    Files.writeString(input, String.join("\n",
        "# comment",
        "",
        "cp\ta\\tb\\u00e9\tt\t3\t1\t2",
        "raw\t00 01\t-",
        "raw\t-\tff") + "\n");
    List<byte[][]> records = CheckpointWriter.parse(input.toString());
    assertEquals(3, records.size());
    assertArrayEquals(CheckpointWriter.checkpointKey("a\tb\u00e9", "t", 3), records.get(0)[0]);
    assertArrayEquals(CheckpointWriter.checkpointValue(1, 2, ""), records.get(0)[1]);
    assertArrayEquals(new byte[] {0, 1}, records.get(1)[0]);
    assertNull(records.get(1)[1]);
    assertNull(records.get(2)[0]);
  }

  @Test
  void reportsTheLineOfABadRecord(@TempDir Path dir) throws Exception {
    Path input = dir.resolve("in.tsv");
    Files.writeString(input, "cp\tg\tt\t0\t1\t2\ncp\tg\tt\tx\t1\t2\n");
    Args.UsageException e =
        assertThrows(Args.UsageException.class, () -> CheckpointWriter.parse(input.toString()));
    assertEquals(true, e.getMessage().contains("line 2"), e.getMessage());
  }
}
