package dev.mm2offsets.reference;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * Entry point of the Java oracle: a thin command-line wrapper around Kafka's own
 * {@code org.apache.kafka.connect.mirror.RemoteClusterUtils} and {@code MirrorClient}, so the Rust
 * mm2-offsets can be checked against (and benchmarked against) the real thing.
 *
 * <p>Contract: stdout carries exactly one line of canonical JSON on success and nothing otherwise;
 * every diagnostic goes to stderr. Exit codes: 0 success, 1 the Kafka call (or I/O) failed, 2 the
 * command line was wrong.
 */
public final class Main {
  static final int EXIT_OK = 0;
  static final int EXIT_FAILED = 1;
  static final int EXIT_USAGE = 2;

  static final String USAGE =
      """
      usage: java -jar mm2-reference.jar COMMAND [--option value ...]

      Commands (all print one line of JSON with sorted keys on stdout):
        translate          --source ALIAS (--group G ... | --groups-file F) --timeout-ms N
                           RemoteClusterUtils.translateOffsets(props, ALIAS, G, timeout), once per group
        translate-pattern  --source ALIAS --pattern REGEX --timeout-ms N
                           RemoteClusterUtils.translateOffsets(props, ALIAS, Pattern, timeout)
                           (KIP-1239: only in jars built with Kafka >= 4.3)
        topology           [--alias A ...]
                           heartbeatTopics, checkpointTopics, upstreamClusters,
                           MirrorClient.remoteTopics(), replicationHops(props, A) per alias
        consume            --topic T --timeout-ms N
                           the Java consumer's bare read of every partition, start to end;
                           prints the record count (the benchmarks' JVM peer of kcat)
        write-checkpoints  --topic T [--partition P] [--create-partitions N] --input FILE|-
                           test helper: produce hand-made checkpoint records (see README)
        version            Kafka client version in this jar and whether the Pattern overload exists
        pattern-matches    java.util.regex.Pattern.matches for (pattern, input) pairs read from
                           stdin; no broker (see PatternMatches.java for the line format)

      Client options (every command but version):
        --bootstrap-server HOST:PORT[,HOST:PORT]
        --property KEY=VALUE        repeatable, e.g. replication.policy.separator=_ or security.protocol=SSL
        --property-file FILE        java.util.Properties file, read first (keep secrets off the command line)

      --groups-file: UTF-8, one group id per line (lines end at LF, CRLF or CR), taken verbatim;
      empty lines are skipped. Duplicate groups are queried once.
      Exit codes: 0 ok, 1 the Kafka call or I/O failed, 2 usage error.
      Logs: WARN+ on stderr; -Dmm2ref.log.level=info shows MirrorClient's INFO lines;
      -Dmm2ref.debug=true adds Java stack traces to errors.
      """;

  private Main() {}

  /** Runs one command and exits with its status. */
  public static void main(String[] argv) {
    // Keep a private handle on the real stdout for the JSON answer, then point System.out at stderr
    // before any library initialises: nothing but our JSON can reach stdout (log4j's status logger
    // and any stray println included).
    PrintStream json =
        new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
    System.setOut(System.err);
    int code = run(Arrays.asList(argv), json);
    json.flush();
    System.err.flush();
    System.exit(code);
  }

  static int run(List<String> argv, PrintStream json) {
    if (argv.isEmpty()) {
      System.err.print(USAGE);
      return EXIT_USAGE;
    }
    String command = argv.get(0);
    List<String> rest = argv.subList(1, argv.size());
    try {
      Object result =
          switch (command) {
            case "translate" -> Commands.translate(rest);
            case "translate-pattern" -> Commands.translatePattern(rest);
            case "topology" -> Commands.topology(rest);
            case "write-checkpoints" -> CheckpointWriter.run(rest);
            case "consume" -> Consume.run(rest);
            case "version" -> Commands.version(rest);
            case "pattern-matches" -> PatternMatches.run(rest, json);
            case "help", "--help", "-h" -> {
              System.err.print(USAGE);
              yield null;
            }
            default -> throw new Args.UsageException("unknown command '" + command + "'");
          };
      if (result != null) {
        json.println(Json.write(result));
      }
      return EXIT_OK;
    } catch (Args.UsageException e) {
      System.err.println("mm2-reference: " + e.getMessage());
      System.err.println("mm2-reference: run with --help for usage");
      return EXIT_USAGE;
    } catch (Exception | LinkageError e) {
      // LinkageError: e.g. NoClassDefFoundError from a jar built against a different Kafka.
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      System.err.println("mm2-reference: error: " + describe(e));
      if (Boolean.getBoolean("mm2ref.debug")) {
        e.printStackTrace(System.err);
      }
      return EXIT_FAILED;
    }
  }

  /** "Outer: msg; caused by Inner: msg" so the real reason (often a nested Kafka error) shows. */
  static String describe(Throwable e) {
    StringBuilder text = new StringBuilder();
    Throwable current = e;
    for (int depth = 0; current != null && depth < 8; depth++) {
      if (depth > 0) {
        text.append("; caused by ");
      }
      if (current instanceof Commands.ToolError) {
        text.append(current.getMessage());
      } else {
        text.append(current.getClass().getName());
        if (current.getMessage() != null) {
          text.append(": ").append(current.getMessage());
        }
      }
      if (current.getCause() == current) {
        break;
      }
      current = current.getCause();
    }
    return text.toString();
  }
}
