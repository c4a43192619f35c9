// A TCP proxy on loopback that can be cut and restored: the database "goes away" for the connections
// through it (and refuses new ones) while everything else keeps working. It can also freeze: connections
// stay open, new ones are accepted, and nothing is forwarded either way until thaw() — a server that
// stopped answering (SIGSTOP, a full disk, a network partition that drops packets silently). And it can be
// pointed at another server, as a virtual IP moved by Patroni or HAProxy after a failover.
import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Drops every connection and refuses new ones until restore(). */
  cut(): Promise<void>;
  restore(): Promise<void>;
  /** Holds every byte in both directions, on open and new connections, until thaw(). */
  freeze(): void;
  /** Delivers what was held, in order, and forwards again. */
  thaw(): void;
  /** Drops every connection; new ones go to this port (on the same host). */
  retarget(port: number): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, initialPort: number): Promise<TcpProxy> {
  let targetPort = initialPort;
  const sockets = new Set<net.Socket>();
  /** Bytes held while frozen, per destination socket, in arrival order. */
  const held = new Map<net.Socket, Buffer[]>();
  let frozen = false;
  let server: net.Server | undefined;
  let port = 0;

  const forward = (from: net.Socket, to: net.Socket) => {
    from.on('data', (chunk: Buffer) => {
      if (frozen) {
        const queue = held.get(to) ?? [];
        queue.push(chunk);
        held.set(to, queue);
      } else if (!to.destroyed) {
        to.write(chunk);
      }
    });
  };

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect(targetPort, targetHost);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => {
            sockets.delete(socket);
            held.delete(socket);
          });
          socket.on('error', () => socket.destroy());
        }
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
        forward(client, upstream);
        forward(upstream, client);
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as net.AddressInfo).port;
        server = s;
        resolve();
      });
    });

  const stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      if (!server) return resolve();
      server.close(() => resolve());
      server = undefined;
    });

  await listen();
  return {
    port,
    cut: stop,
    restore: listen,
    freeze() {
      frozen = true;
    },
    thaw() {
      frozen = false;
      for (const [to, chunks] of held) if (!to.destroyed) for (const chunk of chunks) to.write(chunk);
      held.clear();
    },
    retarget(port) {
      targetPort = port;
      for (const socket of sockets) socket.destroy();
    },
    close: stop,
  };
}
