import { describe, expect, it } from 'vitest';
import { parsePcapRequests } from '../bench/arrivals-capture.ts';
import { comparePerKey, maxInSlidingWindow } from '../bench/arrivals-per-key.ts';

/**
 * The benches' capture reader (bench/arrivals-capture.ts) on pcaps built here: the
 * same bytes tcpdump writes for loopback (Ethernet link type, IPv4, TCP). The capture
 * itself needs root and is exercised by `npm run bench -- orgs`.
 */

function pcap(frames: Array<{ at: number; srcPort: number; seq: number; payload: string }>): Buffer {
  const header = Buffer.alloc(24);
  header.writeUInt32LE(0xa1b23c4d, 0); // nanosecond timestamps, as the bench asks tcpdump for
  header.writeUInt16LE(2, 4);
  header.writeUInt16LE(4, 6);
  header.writeUInt32LE(262144, 16);
  header.writeUInt32LE(1, 20);
  const parts = [header];
  for (const f of frames) {
    const payload = Buffer.from(f.payload, 'latin1');
    const eth = Buffer.alloc(14);
    eth.writeUInt16BE(0x0800, 12);
    const ip = Buffer.alloc(20);
    ip[0] = 0x45;
    ip.writeUInt16BE(20 + 20 + payload.length, 2);
    ip[9] = 6;
    ip.set([127, 0, 0, 1], 12);
    ip.set([127, 0, 0, 1], 16);
    const tcp = Buffer.alloc(20);
    tcp.writeUInt16BE(f.srcPort, 0);
    tcp.writeUInt16BE(4000, 2);
    tcp.writeUInt32BE(f.seq >>> 0, 4);
    tcp[12] = 5 << 4;
    const frame = Buffer.concat([eth, ip, tcp, payload]);
    const record = Buffer.alloc(16);
    record.writeUInt32LE(Math.floor(f.at / 1000), 0);
    record.writeUInt32LE(Math.round((f.at % 1000) * 1e6), 4);
    record.writeUInt32LE(frame.length, 8);
    record.writeUInt32LE(frame.length, 12);
    parts.push(record, frame);
  }
  return Buffer.concat(parts);
}

const get = (target: string, key: string): string => `GET ${target} HTTP/1.1\r\nhost: 127.0.0.1:4000\r\nauthorization: Bearer ${key}\r\n\r\n`;

describe('the capture reader', () => {
  it('stamps each request with the segment of its first byte, across split, coalesced and retransmitted segments', () => {
    const post = `POST /api/v2/users HTTP/1.1\r\nauthorization: Bearer b\r\ncontent-type: application/json\r\ncontent-length: 13\r\n\r\n{"email":"x"}`;
    const first = get('/api/v2/results?page=1', 'a');
    const second = get('/api/v2/results?page=2', 'a');
    const frames = [
      // A request split in two segments: stamped by the first.
      { at: 1_000_000.5, srcPort: 50001, seq: 100, payload: first.slice(0, 20) },
      { at: 1_000_001.5, srcPort: 50001, seq: 120, payload: first.slice(20) },
      // The second segment again (a retransmission): not a new request.
      { at: 1_000_002, srcPort: 50001, seq: 120, payload: first.slice(20) },
      // Headers and body in two writes on another connection, then a wrapped sequence number.
      { at: 1_000_010, srcPort: 50002, seq: 0xffff_fff0, payload: post.slice(0, post.length - 13) },
      { at: 1_000_011, srcPort: 50002, seq: (0xffff_fff0 + post.length - 13) >>> 0, payload: post.slice(-13) },
      // Two requests in one segment: both carry its time.
      { at: 1_000_100, srcPort: 50001, seq: 100 + first.length, payload: second + get('/api/v2/courses', 'a') },
    ];
    const { requests, streamGaps } = parsePcapRequests(pcap(frames));
    expect(streamGaps).toBe(0);
    expect(requests.map((r) => [r.at, r.method, r.target, r.authorization])).toEqual([
      [1_000_000.5, 'GET', '/api/v2/results?page=1', 'Bearer a'],
      [1_000_010, 'POST', '/api/v2/users', 'Bearer b'],
      [1_000_100, 'GET', '/api/v2/results?page=2', 'Bearer a'],
      [1_000_100, 'GET', '/api/v2/courses', 'Bearer a'],
    ]);
  });

  it('resynchronises on the next request line after a segment the capture lost', () => {
    const a = get('/a', 'k');
    const b = get('/b', 'k');
    const c = get('/c', 'k');
    const frames = [
      { at: 1, srcPort: 50003, seq: 1, payload: a },
      // b's first half was lost: its tail, then c, arrive in one segment.
      { at: 3, srcPort: 50003, seq: 1 + a.length + 10, payload: b.slice(10) + c },
    ];
    const { requests, streamGaps } = parsePcapRequests(pcap(frames));
    expect(streamGaps).toBe(1);
    expect(requests.map((r) => r.target)).toEqual(['/a', '/c']);
  });
});

describe('per-key arrivals', () => {
  it('counts a sliding second half-open, as the simulator does', () => {
    expect(maxInSlidingWindow([0, 105, 210, 999.9, 1000])).toBe(4);
  });

  it('matches each simulator stamp to its captured request and reports how late the stamp was', () => {
    // Eleven requests 104 ms apart (10 in any second at the wire); the first one stamped 50 ms late.
    const captured = Array.from({ length: 11 }, (_, i) => ({ key: 'org01', at: 10_000 + i * 104, method: 'GET', target: `/api/v2/results?page=${i + 1}` }));
    const simulator = captured.map((c, i) => ({ ...c, at: c.at + (i === 0 ? 50 : 0.5) }));
    const grants = new Map([['org01', captured.map((c) => c.at - 2)]]);
    const c = comparePerKey({ budget: 10, simulator, captured, grants });
    expect(c.simulator.maxPerKey).toBe(11);
    expect(c.capture?.maxPerKey).toBe(10);
    expect(c.grants?.maxPerKey).toBe(10);
    expect(c.capture?.unmatchedSimulator).toBe(0);
    expect(c.stampDelayMs?.max).toBe(50);
    expect(c.sinceGrantMs?.p50).toBe(2);
    expect(c.simulatorOverBudget?.[0]).toMatchObject({ key: 'org01', count: 11, captureCount: 10 });
    expect(c.captureOverBudget).toEqual([]);
  });
});
