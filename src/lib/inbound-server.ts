import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP server for requests pushed to us (platform webhooks, identity providers'
 * SCIM): a slow or stalled sender cannot hold a connection for ever, and closing lets
 * requests in flight finish (their changes are recorded and answered) while idle
 * keep-alive connections go at once, all of them after `forceAfterMs`.
 */
export interface InboundServer {
  port: number;
  close(): Promise<void>;
}

export async function listenInbound(handler: http.RequestListener, options: { port: number; host: string; forceAfterMs?: number }): Promise<InboundServer> {
  const server = http.createServer(handler);
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), options.forceAfterMs ?? 5_000);
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
