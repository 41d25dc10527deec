import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import net.sourceforge.plantuml.BlockUml;
import net.sourceforge.plantuml.ErrorUml;
import net.sourceforge.plantuml.SourceStringReader;
import net.sourceforge.plantuml.cli.CliOptions;
import net.sourceforge.plantuml.cli.CliParser;
import net.sourceforge.plantuml.core.Diagram;
import net.sourceforge.plantuml.core.DiagramDescription;
import net.sourceforge.plantuml.error.PSystemError;
import net.sourceforge.plantuml.json.Json;
import net.sourceforge.plantuml.json.JsonObject;

/**
 * PlantUML over the process's own stdin/stdout: no socket, no HTTP, one JVM for every check of a sysmo process.
 *
 * A request is a header line {@code ID MODE NBYTES} and NBYTES of UTF-8 diagram source; MODE is {@code check}
 * (parse the diagram: its first error and line, its description; nothing is drawn) or {@code svg} (the same, and
 * the SVG PlantUML draws). The answer is a header line {@code ID NJSON NSVG}, NJSON bytes of a JSON object with
 * {@code status} (200, or 500 when PlantUML threw), {@code error}, {@code error_line} (1-based) and
 * {@code description}, then NSVG bytes of SVG (none for check). Requests are served by a small pool of threads,
 * answers written whole, in any order.
 * The diagram is read as PlantUML's picoweb reads it ({@code --charset UTF-8}, a source without {@code @start}
 * wrapped in {@code @startuml}/{@code @enduml}), so the verdicts are the same. Anything PlantUML prints goes to
 * stderr (the server's log), never into the answers.
 */
public final class PlantUMLPipe {
    private static final String NO_START = "No valid @start/@end found, please check the version";

    private PlantUMLPipe() {
    }

    public static void main(String[] args) throws Exception {
        final OutputStream answers = new FileOutputStream(FileDescriptor.out);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8));
        final int threads = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        final ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "plantuml-pipe");
            t.setDaemon(true);
            return t;
        });
        final InputStream in = new BufferedInputStream(System.in, 1 << 16);
        while (true) {
            final String header = readLine(in);
            if (header == null) {
                break;
            }
            final String[] parts = header.trim().split(" ");
            if (parts.length != 3) {
                System.err.println("plantuml-pipe: bad header: " + header);
                break;
            }
            final String id = parts[0];
            final String mode = parts[1];
            final byte[] body = in.readNBytes(Integer.parseInt(parts[2]));
            final String source = new String(body, StandardCharsets.UTF_8);
            pool.execute(() -> {
                final ByteArrayOutputStream svg = new ByteArrayOutputStream();
                final String json = answer(source, "svg".equals(mode) ? svg : null);
                answer(answers, id, json.getBytes(StandardCharsets.UTF_8), svg.toByteArray());
            });
        }
        pool.shutdown();
    }

    private static String readLine(InputStream in) throws IOException {
        final ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) != -1) {
            if (b == '\n') {
                return line.toString(StandardCharsets.UTF_8);
            }
            line.write(b);
        }
        return line.size() == 0 ? null : line.toString(StandardCharsets.UTF_8);
    }

    private static void answer(OutputStream out, String id, byte[] json, byte[] svg) {
        final byte[] head = (id + " " + json.length + " " + svg.length + "\n").getBytes(StandardCharsets.UTF_8);
        synchronized (out) {
            try {
                out.write(head);
                out.write(json);
                out.write(svg);
                out.flush();
            } catch (IOException e) {
                System.exit(0); // sysmo went away
            }
        }
    }

    /** The verdict as JSON; with {@code svg} not null, the diagram is also drawn into it. */
    static String answer(String source, ByteArrayOutputStream svg) {
        final boolean draw = svg != null;
        final JsonObject result = Json.object();
        try {
            final CliOptions options = CliParser.parse(draw ? new String[] {"-tsvg", "--charset", "UTF-8"}
                    : new String[] {"--charset", "UTF-8"});
            final String text = source.startsWith("@start") ? source : "@startuml\n" + source + "\n@enduml";
            final SourceStringReader reader = new SourceStringReader(options.getDefaultDefines(), text,
                    StandardCharsets.UTF_8, options.getConfig(), null);
            final List<BlockUml> blocks = reader.getBlocks();
            result.add("status", 200);
            if (blocks.isEmpty()) {
                result.add("error", NO_START);
                result.add("error_line", Json.NULL);
                result.add("description", Json.NULL);
                return result.toString();
            }
            final Diagram diagram = blocks.get(0).getDiagram();
            if (draw) {
                diagram.exportDiagram(svg, 0, options.getFileFormatOption());
            }
            if (diagram instanceof PSystemError) {
                final List<String> errors = new ArrayList<>();
                final List<String> lines = new ArrayList<>();
                for (ErrorUml error : ((PSystemError) diagram).getErrorsUml()) {
                    errors.add(error.getError());
                    lines.add(Integer.toString(error.getLineLocation().getPosition() + 1));
                }
                result.add("error", String.join(", ", errors));
                if (lines.size() == 1) {
                    result.add("error_line", Integer.parseInt(lines.get(0)));
                } else {
                    result.add("error_line", Json.NULL);
                }
            } else {
                result.add("error", Json.NULL);
                result.add("error_line", Json.NULL);
            }
            final DiagramDescription description = diagram.getDescription();
            if (description != null && description.getDescription() != null) {
                result.add("description", description.getDescription());
            } else {
                result.add("description", Json.NULL);
            }
            return result.toString();
        } catch (Throwable e) {
            if (draw) {
                svg.reset();
            }
            final JsonObject crash = Json.object();
            crash.add("status", 500);
            crash.add("error", Json.NULL);
            crash.add("error_line", Json.NULL);
            crash.add("description", Json.NULL);
            crash.add("crash", String.valueOf(e));
            return crash.toString();
        }
    }
}
