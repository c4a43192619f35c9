// A TCP proxy on loopback that can be cut and restored: the database "goes away" for the connections
// through it (and refuses new ones) while everything else keeps working.
import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Drops every connection and refuses new ones until restore(). */
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect(targetPort, targetHost);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => socket.destroy());
        }
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
        client.pipe(upstream).pipe(client);
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
  return { port, cut: stop, restore: listen, close: stop };
}
