/**
 * A lean HTTP/1.1 load generator for "N requests at once": N keep-alive connections
 * opened beforehand (as an identity provider keeps its connections to a SCIM service),
 * then one request written on each in the same tick, each timed from its write to the
 * last byte of its answer. undici's client costs ~150 µs of CPU a request on this
 * machine, on the same two cores as the server it measures: a trivial Node server
 * answering 1,000 requests at once measured p95 140–160 ms through undici and 22 ms
 * through this client (docs/benchmarks.md, SCIM). Requests are pre-serialised bytes and
 * answers are read only far enough to know where each ends.
 */
import net from 'node:net';

export interface BurstRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface BurstAnswer {
  status: number;
  ms: number;
  body: string;
}

export interface BurstClient {
  /** Sends requests[i] on connection i (requests.length ≤ connections), all at once. */
  burst(requests: readonly BurstRequest[]): Promise<BurstAnswer[]>;
  close(): void;
}

function serialise(host: string, request: BurstRequest): Buffer {
  const body = request.body === undefined ? undefined : Buffer.from(request.body);
  const lines = [`${request.method} ${request.path} HTTP/1.1`, `Host: ${host}`, ...Object.entries(request.headers).map(([k, v]) => `${k}: ${v}`)];
  if (body) lines.push(`Content-Length: ${body.length}`);
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`);
  return body ? Buffer.concat([head, body]) : head;
}

const HEADER_END = Buffer.from('\r\n\r\n');
const LAST_CHUNK = Buffer.from('0\r\n\r\n');

/** Where the answer in `data` ends, or -1 while it is incomplete (Content-Length or chunked). */
function answerEnd(data: Buffer): { end: number; status: number; bodyStart: number; chunked: boolean } | undefined {
  const headerEnd = data.indexOf(HEADER_END);
  if (headerEnd < 0) return undefined;
  const head = data.subarray(0, headerEnd).toString('latin1');
  const status = Number(head.slice(9, 12));
  const bodyStart = headerEnd + 4;
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (length) {
    const end = bodyStart + Number(length[1]);
    return data.length >= end ? { end, status, bodyStart, chunked: false } : undefined;
  }
  if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
    const last = data.indexOf(LAST_CHUNK, bodyStart);
    return last >= 0 ? { end: last + LAST_CHUNK.length, status, bodyStart, chunked: true } : undefined;
  }
  return { end: bodyStart, status, bodyStart, chunked: false };
}

/** The body of a chunked answer, joined. */
function unchunk(raw: Buffer): string {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', at);
    const size = Number.parseInt(raw.subarray(at, lineEnd).toString('latin1'), 16);
    if (!(size > 0)) break;
    parts.push(raw.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts).toString('utf8');
}

export async function openBurstClient(url: string, connections: number): Promise<BurstClient> {
  const { hostname, port, host } = new URL(url);
  const sockets = await Promise.all(
    Array.from(
      { length: connections },
      () =>
        new Promise<net.Socket>((resolve, reject) => {
          const socket = net.connect(Number(port), hostname, () => {
            socket.off('error', reject);
            resolve(socket);
          });
          socket.setNoDelay(true);
          socket.once('error', reject);
        }),
    ),
  );
  const exchange = (socket: net.Socket, bytes: Buffer): Promise<BurstAnswer> =>
    new Promise((resolve, reject) => {
      let data: Buffer = Buffer.alloc(0);
      let sent = 0;
      const onData = (chunk: Buffer): void => {
        data = data.length === 0 ? chunk : Buffer.concat([data, chunk]);
        const answer = answerEnd(data);
        if (!answer) return;
        const ms = performance.now() - sent;
        done();
        const raw = data.subarray(answer.bodyStart, answer.end);
        resolve({ status: answer.status, ms, body: answer.chunked ? unchunk(raw) : raw.toString('utf8') });
      };
      const onEnd = (): void => {
        done();
        reject(new Error('the server closed a connection before answering'));
      };
      const done = (): void => {
        socket.off('data', onData);
        socket.off('error', onEnd);
        socket.off('end', onEnd);
      };
      socket.on('data', onData);
      socket.once('error', onEnd);
      socket.once('end', onEnd);
      sent = performance.now();
      socket.write(bytes);
    });
  return {
    async burst(requests) {
      if (requests.length > sockets.length) throw new Error(`${requests.length} requests on ${sockets.length} connections`);
      const bytes = requests.map((r) => serialise(host, r));
      return Promise.all(bytes.map((b, i) => exchange(sockets[i]!, b)));
    },
    close() {
      for (const socket of sockets) socket.destroy();
    },
  };
}
