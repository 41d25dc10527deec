package sysmo.tla;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.rmi.server.RMISocketFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.LongAdder;

/**
 * TLC's own main ({@code tlc2.TLC.main}, unchanged), with RMI server sockets whose {@code accept()} waits in Java.
 *
 * <p>TLC exports its fingerprint set over RMI ({@code FPSet extends UnicastRemoteObject}), so every model check
 * has a thread blocked in a native {@code accept()}. At exit the JVM waits up to 300 ms for threads in native code
 * (HotSpot's {@code VM_Exit::wait_for_threads_in_native_to_block}): about half the wall time of a short check.
 * Here the socket is bound as TLC's would be, but its {@code accept()} waits on a monitor, which the exit does not
 * wait for, until the socket is closed. Nothing connects to it: sysmo runs each check in one process.
 * With {@code -sysmo-seeds} first, {@link Seeds}: one simulation per seed on a spec parsed once.
 * Made by {@code sysmo.tools.tla.jvm_startup.launcher}.
 */
public final class TLCMain {
    private TLCMain() {
    }

    public static void main(String[] args) throws Exception {
        RMISocketFactory.setSocketFactory(new WaitingInJava());
        if (args.length > 1 && args[0].equals(Seeds.FLAG)) {
            Seeds.main(Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        if (args.length > 1 && args[0].equals(Simulation.FLAG)) {
            Simulation.main(Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        tlc2.TLC.main(args);
    }

    /**
     * A simulation whose coverage is always reported at its end, and whose end never waits on TLC's report thread.
     *
     * <p>TLC's {@code Simulator} prints its coverage from a {@code ProgressReport} thread: the simulation sets the
     * thread's {@code isRunning} to false, notifies it and joins it; the thread prints progress and coverage each time
     * it wakes while {@code isRunning} held when it last looked. A simulation that ends before the thread first looks
     * (a small spec, a warm JVM, a loaded machine) prints no coverage at all, and one that notifies between the
     * thread's look and its {@code wait(60000)} waits a minute. Whether an action counted as covered depended on that
     * race. Here, after each simulation, the coverage is reported once more (the counts are final: the workers have
     * ended; a reader takes an action's last report), and a daemon thread notifies any report thread told to stop, so
     * none waits out its minute. With {@code -sysmo-simulate} first: TLC's main for one simulation (as
     * {@code tlc2.TLC.main}: parameters, the spec's folder as resolver, {@code process}, TLC's exit status).
     */
    static final class Simulation {
        public static final String FLAG = "-sysmo-simulate";

        private Simulation() {
        }

        static void main(String[] args) throws Exception {
            wakeStoppedReports();
            tlc2.TLC tlc = prepared(args);
            int result = tlc.process();
            reportCoverage(tlc2.TLCGlobals.simulator);
            tlc2.output.MP.flush();
            System.exit(tlc2.output.EC.ExitStatus.errorConstantToExitStatus(result));
        }

        /** TLC with its parameters read and the spec's folder as its resolver, as {@code tlc2.TLC.main} sets it up. */
        static tlc2.TLC prepared(String[] args) {
            tlc2.TLC tlc = new tlc2.TLC();
            if (!tlc.handleParameters(args)) {
                System.exit(1);
            }
            String dir = util.FileUtil.parseDirname(tlc.getMainFile());
            tlc.setResolver(dir.isEmpty() ? new util.SimpleFilenameToStream() : new util.SimpleFilenameToStream(dir));
            return tlc;
        }

        /** The simulation's coverage, once more, now that it has ended (nothing when coverage is off). */
        static void reportCoverage(tlc2.tool.Simulator simulator) {
            if (simulator != null && tlc2.TLCGlobals.isCoverageEnabled()) {
                simulator.reportCoverage();
                tlc2.output.MP.flush();
            }
        }

        /** A daemon thread that notifies, every 10 ms, each of TLC's report threads whose simulation has ended. */
        static void wakeStoppedReports() {
            Thread waker = new Thread(() -> {
                try {
                    Class<?> report = Class.forName("tlc2.tool.Simulator$ProgressReport");
                    Field running = report.getDeclaredField("isRunning");
                    running.setAccessible(true);
                    Thread[] threads = new Thread[64];
                    while (true) {
                        Thread.sleep(10);
                        int count = Thread.enumerate(threads);
                        for (int i = 0; i < count; i++) {
                            Thread each = threads[i];
                            if (report.isInstance(each) && !running.getBoolean(each)) {
                                synchronized (each) {
                                    each.notifyAll();
                                }
                            }
                        }
                    }
                } catch (InterruptedException | ReflectiveOperationException e) {
                    // no such thread class in this TLC: nothing to wake
                }
            }, "sysmo-report-waker");
            waker.setDaemon(true);
            waker.start();
        }
    }

    /** The default RMI socket factory but for its server sockets. */
    static final class WaitingInJava extends RMISocketFactory {
        private final RMISocketFactory standard = RMISocketFactory.getDefaultSocketFactory();

        @Override
        public Socket createSocket(String host, int port) throws IOException {
            return standard.createSocket(host, port);
        }

        @Override
        public ServerSocket createServerSocket(int port) throws IOException {
            return new UnacceptingServerSocket(port);
        }
    }

    /** A bound server socket whose accept() returns only by failing once the socket is closed. */
    static final class UnacceptingServerSocket extends ServerSocket {
        private final Object closing = new Object();

        UnacceptingServerSocket(int port) throws IOException {
            super(port);
        }

        @Override
        public Socket accept() throws IOException {
            synchronized (closing) {
                while (!isClosed()) {
                    try {
                        closing.wait();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new SocketException("interrupted");
                    }
                }
            }
            throw new SocketException("Socket is closed");
        }

        @Override
        public void close() throws IOException {
            super.close();
            synchronized (closing) {
                closing.notifyAll();
            }
        }
    }

    /**
     * TLC's simulation of one spec under several seeds in one JVM, the spec parsed once.
     *
     * <p>Arguments (after {@code -sysmo-seeds}): {@code <seed>,<seed>,... <TLC's own arguments, with -simulate and without -seed>}. The first seed
     * runs as {@code tlc2.TLC.main} would run it ({@code handleParameters}, {@code process}): TLC parses the spec and
     * builds its {@code Tool} inside the {@code Simulator}. Each further seed gets a {@code Simulator} of its own that
     * shares that {@code Tool} (the parsed spec and its constant definitions, which a simulation only reads), with the
     * fields TLC's constructor sets per run made afresh: its random generator seeded as {@code process} seeds it, its
     * counters, work queue, workers, local values ({@code TLCSet}) and start time, and new coverage counters
     * ({@code CostModelCreator.create}). Its output is what TLC prints for a run: the simulation banner (message 2188),
     * whatever the simulation prints, and "Finished" (2186).
     *
     * <p>After each seed a line {@code @!@!@SYSMO-SEED <seed> <TLC's result code>} ends that seed's output. The first
     * seed whose result is not 0 (an error, a violation) ends the run with TLC's exit status: its caller runs that seed
     * and the seeds after it in JVMs of their own, as before. Used by {@code sysmo.tools.tla.tlc.simulate_seeds}.
     */
    static final class Seeds {
        public static final String FLAG = "-sysmo-seeds";
        public static final String END = "@!@!@SYSMO-SEED";

        private Seeds() {
        }

        static void main(String[] args) throws Exception {
            long[] seeds = Arrays.stream(args[0].split(",")).mapToLong(Long::parseLong).toArray();
            String[] tlcArgs = new String[args.length + 1];
            tlcArgs[0] = "-seed";
            tlcArgs[1] = Long.toString(seeds[0]);
            System.arraycopy(args, 1, tlcArgs, 2, args.length - 1);

            Simulation.wakeStoppedReports();
            tlc2.TLC tlc = Simulation.prepared(tlcArgs);
            int result = tlc.process();
            Simulation.reportCoverage(tlc2.TLCGlobals.simulator);
            if (!ended(seeds[0], result)) {
                System.exit(tlc2.output.EC.ExitStatus.errorConstantToExitStatus(result));
            }
            tlc2.tool.Simulator first = tlc2.TLCGlobals.simulator;
            Field tool = Simulator.field("tool");
            Method banner = tlc2.TLC.class.getDeclaredMethod("printStartupBanner", int.class, Map.class);
            banner.setAccessible(true);
            for (int i = 1; i < seeds.length; i++) {
                long started = System.currentTimeMillis();
                banner.invoke(tlc, tlc2.output.EC.TLC_MODE_SIMU, tlc2.TLC.getSimulationRuntime(seeds[i]));
                tlc2.tool.Simulator next = Simulator.forSeed(first, seeds[i]);
                if (tlc2.TLCGlobals.isCoverageEnabled()) {
                    tlc2.tool.coverage.CostModelCreator.create((tlc2.tool.ITool) tool.get(first));
                }
                tlc2.TLCGlobals.simulator = next;
                result = next.simulate();
                tlc2.output.MP.printMessage(tlc2.output.EC.TLC_FINISHED,
                        (System.currentTimeMillis() - started) + "ms");
                Simulation.reportCoverage(next);  // after "Finished", as for the first seed
                tlc2.output.MP.flush();
                if (!ended(seeds[i], result)) {
                    System.exit(tlc2.output.EC.ExitStatus.errorConstantToExitStatus(result));
                }
            }
            System.exit(0);
        }

        private static boolean ended(long seed, int result) {
            tlc2.output.MP.flush();
            System.out.println(END + " " + seed + " " + result);
            System.out.flush();
            return result == tlc2.output.EC.NO_ERROR;
        }

        /** A Simulator made without its constructor (which would parse the spec again), sharing a parsed one's Tool. */
        static final class Simulator {
            private Simulator() {
            }

            static Field field(String name) throws NoSuchFieldException {
                Field found = tlc2.tool.Simulator.class.getDeclaredField(name);
                found.setAccessible(true);
                return found;
            }

            static tlc2.tool.Simulator forSeed(tlc2.tool.Simulator template, long seed) throws Exception {
                Field unsafeField = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
                unsafeField.setAccessible(true);
                sun.misc.Unsafe unsafe = (sun.misc.Unsafe) unsafeField.get(null);
                tlc2.tool.Simulator made = (tlc2.tool.Simulator) unsafe.allocateInstance(tlc2.tool.Simulator.class);
                for (Field each : tlc2.tool.Simulator.class.getDeclaredFields()) {
                    if (Modifier.isStatic(each.getModifiers())) {
                        continue;
                    }
                    each.setAccessible(true);
                    each.set(made, each.get(template));
                }
                tlc2.util.RandomGenerator rng = new tlc2.util.RandomGenerator();
                rng.setSeed(seed, (long) field("aril").get(template));  // as TLC.process seeds a simulation
                int numWorkers = (int) field("numWorkers").get(template);
                field("rng").set(made, rng);
                field("seed").set(made, seed);
                field("numOfGenStates").set(made, new LongAdder());
                field("numOfGenTraces").set(made, new LongAdder());
                field("localValues").set(made, new tlc2.value.IValue[((Object[]) field("localValues").get(template)).length]);
                field("initStates").set(made, new tlc2.tool.StateVec(0));
                field("workerResultQueue").set(made, new LinkedBlockingQueue<Object>());
                field("startTime").set(made, System.currentTimeMillis());
                List<Object> workers = new ArrayList<>(numWorkers);
                field("workers").set(made, workers);
                return made;
            }
        }
    }
}
