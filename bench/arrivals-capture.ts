/**
 * Arrival times at the platform that do not depend on the simulator's event loop: the
 * kernel's capture timestamps of the HTTP requests sent to the simulator's port on the
 * loopback interface (bench only).
 *
 * Why: the simulator stamps a request when its event loop handles it; with 20
 * organisations' pages to build, a stamp can be late, and one late stamp can make a
 * sliding second of 11 out of grants spaced 105 ms apart. The kernel stamps each packet
 * when the client's write hands it to the loopback device, which is when the request
 * reached the platform's socket.
 *
 * Capture needs `tcpdump` (Debian package tcpdump) or `dumpcap` (package tshark), and
 * root or CAP_NET_RAW. Without them `startArrivalCapture` says why and the benches print
 * the simulator's stamps alone. The pcap is parsed here (Ethernet/cooked link layers, IPv4
 * and IPv6, TCP reassembled per connection), so tshark itself is not needed to read it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** One HTTP request as captured: when its first byte went onto the loopback device. */
export interface CapturedRequest {
  /** Epoch ms (kernel capture timestamp, µs or ns precision). */
  at: number;
  method: string;
  /** The request target: path and query as sent. */
  target: string;
  /** The Authorization header (kept in memory only, to attribute the request to its key). */
  authorization: string | undefined;
  /** The first request on its TCP connection (the client had to connect before sending it). */
  firstOnConnection: boolean;
  /** The client's TCP port: which process sent it, with `watchConnections`. */
  srcPort: number;
}

/**
 * Which process owns each client connection to `port` (`ss -tnp`, polled): local port → pid.
 * Keep-alive connections last seconds, so a poll every 200 ms sees nearly all of them.
 */
export function watchConnections(port: number, everyMs = 200): { stop(): Map<number, number> } {
  const owners = new Map<number, number>();
  const poll = (): void => {
    const out = spawnSync('ss', ['-tnpH', 'state', 'established', `( dport = :${port} )`], { encoding: 'utf8' });
    for (const line of (out.stdout ?? '').split('\n')) {
      const m = /:(\d+)\s+\S+:\d+\s+users:\(\("[^"]*",pid=(\d+)/.exec(line);
      if (m) owners.set(Number(m[1]), Number(m[2]));
    }
  };
  poll();
  const timer = setInterval(poll, everyMs);
  return {
    stop() {
      clearInterval(timer);
      poll();
      return owners;
    },
  };
}

export interface ArrivalCapture {
  /** 'tcpdump' or 'dumpcap'. */
  tool: string;
  /** Stops the capture and returns the requests seen, in capture order. */
  stop(): Promise<{ requests: CapturedRequest[]; streamGaps: number; dropped: number | null }>;
}

function onPath(tool: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;
}

/**
 * Starts capturing the client → server segments carrying data to `port` on loopback.
 * Resolves with the capture once the tool is listening, or with the reason it cannot.
 */
export async function startArrivalCapture(port: number, options: { iface?: string; tool?: 'tcpdump' | 'dumpcap' } = {}): Promise<ArrivalCapture | { unavailable: string }> {
  const tool = options.tool ?? (onPath('tcpdump') ? 'tcpdump' : onPath('dumpcap') ? 'dumpcap' : undefined);
  if (tool === undefined) return { unavailable: 'neither tcpdump nor dumpcap is installed (apt-get install tcpdump)' };
  const iface = options.iface ?? 'lo';
  const dir = await mkdtemp(path.join(tmpdir(), 'trainsync-capture-'));
  const file = path.join(dir, 'arrivals.pcap');
  // Only segments with a payload, toward the simulator: the responses (megabytes of pages) are never copied.
  const filter = `tcp dst port ${port} and (((ip[2:2] - ((ip[0]&0xf)<<2)) - ((tcp[12]&0xf0)>>2)) != 0)`;
  // --immediate-mode: without it libpcap (TPACKET_V3) hands packets over a block at a time, up to
  // a second late, and the block still open when tcpdump is stopped is never written: the last
  // requests before stop() went missing (4 of 16,425 in a SCIM steady run).
  const args =
    tool === 'tcpdump'
      ? ['-i', iface, '-n', '-U', '--immediate-mode', '-B', '8192', '-s', '0', '--time-stamp-precision', 'nano', '-w', file, filter]
      : ['-i', iface, '-P', '-B', '8', '-s', '65535', '-q', '-w', file, '-f', filter];
  const child = spawn(tool, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  child.once('error', (error) => {
    stderr += String(error);
  });
  const listening = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 10_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      // tcpdump: "listening on lo, …"; dumpcap: "Capturing on 'Loopback: lo'".
      if (/listening on|Capturing on/i.test(stderr)) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  if (!listening) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    return { unavailable: `${tool} did not start capturing: ${stderr.trim().slice(-300) || 'no output'}` };
  }
  let stopped: ReturnType<ArrivalCapture['stop']> | undefined;
  return {
    tool,
    // Once only: a bench's cleanup may call it again after the run read it.
    stop: () => (stopped ??= stopOnce()),
  };

  async function stopOnce(): ReturnType<ArrivalCapture['stop']> {
    {
      // A moment for the last segments to be written (tcpdump -U flushes per packet).
      await new Promise((resolve) => setTimeout(resolve, 300));
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      await exited;
      const dropMatch = /(\d+) packets? dropped by kernel/.exec(stderr) ?? /Packets dropped: (\d+)/i.exec(stderr);
      try {
        const parsed = parsePcapRequests(await readFile(file));
        return { ...parsed, dropped: dropMatch ? Number(dropMatch[1]) : null };
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  }
}

// ---- pcap → HTTP requests ---------------------------------------------------------------

interface Chunk {
  data: Buffer;
  at: number;
}

interface Stream {
  nextSeq: number;
  chunks: Chunk[];
  requests: number;
  srcPort: number;
}

const METHODS = /^(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) (\S+) HTTP\/1\.[01]$/;

/** The IP payload's offset for a frame of this link type, or -1 when it carries no IP. */
function ipOffset(linkType: number, frame: Buffer): number {
  switch (linkType) {
    case 1: // Ethernet (Linux loopback)
      return frame.readUInt16BE(12) === 0x0800 || frame.readUInt16BE(12) === 0x86dd ? 14 : -1;
    case 113: // Linux cooked (SLL)
      return 16;
    case 276: // Linux cooked v2
      return 20;
    case 0: // BSD loopback
    case 108:
      return 4;
    case 101: // raw IP
    case 228:
      return 0;
    default:
      return -1;
  }
}

/**
 * Every HTTP request in a pcap of client → server segments, stamped with the capture time
 * of the segment holding its first byte. Connections are reassembled by sequence number;
 * a retransmitted segment is skipped, a gap (a segment the capture lost) resynchronises
 * on the next request line and is counted.
 */
export function parsePcapRequests(pcap: Buffer): { requests: CapturedRequest[]; streamGaps: number } {
  if (pcap.length < 24) return { requests: [], streamGaps: 0 };
  const magic = pcap.readUInt32LE(0);
  let little: boolean;
  let nano: boolean;
  if (magic === 0xa1b2c3d4 || magic === 0xa1b23c4d) {
    little = true;
    nano = magic === 0xa1b23c4d;
  } else if (pcap.readUInt32BE(0) === 0xa1b2c3d4 || pcap.readUInt32BE(0) === 0xa1b23c4d) {
    little = false;
    nano = pcap.readUInt32BE(0) === 0xa1b23c4d;
  } else {
    throw new Error('not a pcap file (pcapng is not read: dumpcap is run with -P)');
  }
  const u32 = (offset: number): number => (little ? pcap.readUInt32LE(offset) : pcap.readUInt32BE(offset));
  const linkType = u32(20) & 0x0fffffff;
  const streams = new Map<string, Stream>();
  const requests: CapturedRequest[] = [];
  let streamGaps = 0;

  for (let offset = 24; offset + 16 <= pcap.length; ) {
    const sec = u32(offset);
    const frac = u32(offset + 4);
    const caplen = u32(offset + 8);
    const frame = pcap.subarray(offset + 16, offset + 16 + caplen);
    offset += 16 + caplen;
    const at = sec * 1000 + (nano ? frac / 1e6 : frac / 1e3);
    const ip = ipOffset(linkType, frame);
    if (ip < 0 || ip >= frame.length) continue;
    const version = frame[ip]! >> 4;
    let tcp: number;
    let ipEnd: number;
    let src: string;
    let dst: string;
    if (version === 4) {
      if (frame[ip + 9] !== 6) continue;
      tcp = ip + (frame[ip]! & 0x0f) * 4;
      ipEnd = ip + frame.readUInt16BE(ip + 2);
      src = frame.subarray(ip + 12, ip + 16).join('.');
      dst = frame.subarray(ip + 16, ip + 20).join('.');
    } else if (version === 6) {
      if (frame[ip + 6] !== 6) continue; // extension headers are not expected on loopback
      tcp = ip + 40;
      ipEnd = ip + 40 + frame.readUInt16BE(ip + 4);
      src = frame.subarray(ip + 8, ip + 24).toString('hex');
      dst = frame.subarray(ip + 24, ip + 40).toString('hex');
    } else continue;
    const srcPort = frame.readUInt16BE(tcp);
    const dstPort = frame.readUInt16BE(tcp + 2);
    const seq = frame.readUInt32BE(tcp + 4);
    const payload = frame.subarray(tcp + ((frame[tcp + 12]! >> 4) * 4), Math.min(ipEnd, frame.length));
    if (payload.length === 0) continue;
    const id = `${src}:${srcPort}>${dst}:${dstPort}`;
    let stream = streams.get(id);
    if (!stream) streams.set(id, (stream = { nextSeq: seq, chunks: [], requests: 0, srcPort }));
    const ahead = (seq - stream.nextSeq) | 0; // sequence numbers wrap at 2^32
    let data = payload;
    if (ahead < 0) {
      // Retransmitted, wholly or in part.
      if (-ahead >= payload.length) continue;
      data = payload.subarray(-ahead);
    } else if (ahead > 0) {
      streamGaps += 1;
      stream.chunks = [];
    }
    stream.nextSeq = (seq + payload.length) >>> 0;
    stream.chunks.push({ data, at });
    drain(stream, requests);
  }
  requests.sort((a, b) => a.at - b.at);
  return { requests, streamGaps };
}

/** Takes every complete request off the front of a stream's bytes. */
function drain(stream: Stream, out: CapturedRequest[]): void {
  for (;;) {
    const buffer = stream.chunks.length === 1 ? stream.chunks[0]!.data : Buffer.concat(stream.chunks.map((c) => c.data));
    const headEnd = buffer.indexOf('\r\n\r\n');
    if (headEnd < 0) return;
    const head = buffer.subarray(0, headEnd).toString('latin1').split('\r\n');
    const line = METHODS.exec(head[0] ?? '');
    let length = headEnd + 4;
    if (line) {
      let authorization: string | undefined;
      let contentLength = 0;
      let chunked = false;
      for (const h of head.slice(1)) {
        const colon = h.indexOf(':');
        const name = h.slice(0, colon).trim().toLowerCase();
        const value = h.slice(colon + 1).trim();
        if (name === 'authorization') authorization = value;
        else if (name === 'content-length') contentLength = Number(value);
        else if (name === 'transfer-encoding' && /chunked/i.test(value)) chunked = true;
      }
      if (chunked) {
        const end = buffer.indexOf('\r\n0\r\n\r\n', headEnd);
        if (end < 0) return;
        length = end + 7;
      } else length += contentLength;
      if (buffer.length < length) return;
      out.push({ at: stream.chunks[0]!.at, method: line[1]!, target: line[2]!, authorization, firstOnConnection: stream.requests === 0, srcPort: stream.srcPort });
      stream.requests += 1;
    } else {
      // Not at a request line (a capture gap): skip to the next one.
      const next = /\r\n(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) /.exec(buffer.toString('latin1'));
      if (!next) {
        stream.chunks = [];
        return;
      }
      length = next.index + 2;
    }
    consume(stream, length);
    if (stream.chunks.length === 0) return;
  }
}

/** Drops `n` bytes from the front of a stream, keeping each remaining byte's capture time. */
function consume(stream: Stream, n: number): void {
  let left = n;
  while (left > 0 && stream.chunks.length > 0) {
    const first = stream.chunks[0]!;
    if (first.data.length <= left) {
      left -= first.data.length;
      stream.chunks.shift();
    } else {
      stream.chunks[0] = { data: first.data.subarray(left), at: first.at };
      left = 0;
    }
  }
}
