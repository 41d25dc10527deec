package sysmo.tla;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.rmi.server.RMISocketFactory;

/**
 * TLC's own main ({@code tlc2.TLC.main}, unchanged), with RMI server sockets whose {@code accept()} waits in Java.
 *
 * <p>TLC exports its fingerprint set over RMI ({@code FPSet extends UnicastRemoteObject}), so every model check
 * has a thread blocked in a native {@code accept()}. At exit the JVM waits up to 300 ms for threads in native code
 * (HotSpot's {@code VM_Exit::wait_for_threads_in_native_to_block}): about half the wall time of a short check.
 * Here the socket is bound as TLC's would be, but its {@code accept()} waits on a monitor, which the exit does not
 * wait for, until the socket is closed. Nothing connects to it: sysmo runs each check in one process.
 * Made by {@code sysmo.tools.tla.jvm_startup.launcher}.
 */
public final class TLCMain {
    private TLCMain() {
    }

    public static void main(String[] args) throws Exception {
        RMISocketFactory.setSocketFactory(new WaitingInJava());
        tlc2.TLC.main(args);
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
}
