import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

/**
 * A small OTLP/HTTP receiver in this process: it takes `POST /v1/traces` in the JSON
 * encoding (`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json`), answers 200 as a collector
 * does, and keeps every span it was sent, its attributes flattened to values.
 */

const anyValue: z.ZodType<unknown> = z.lazy(() =>
  z.union([
    z.object({ stringValue: z.string() }),
    z.object({ intValue: z.union([z.string(), z.number()]) }),
    z.object({ doubleValue: z.number() }),
    z.object({ boolValue: z.boolean() }),
    z.object({ arrayValue: z.object({ values: z.array(anyValue).optional() }) }),
    z.object({ kvlistValue: z.object({ values: z.array(z.object({ key: z.string(), value: anyValue })).optional() }) }),
    z.object({ bytesValue: z.string() }),
    z.object({}),
  ]),
);
const keyValues = z.array(z.object({ key: z.string(), value: anyValue })).optional();
const span = z.object({
  traceId: z.string(),
  spanId: z.string(),
  parentSpanId: z.string().optional(),
  name: z.string(),
  kind: z.number(),
  attributes: keyValues,
  events: z.array(z.object({ name: z.string(), attributes: keyValues })).optional(),
  links: z.array(z.object({ traceId: z.string(), spanId: z.string(), attributes: keyValues })).optional(),
  status: z.object({ code: z.number().optional(), message: z.string().optional() }).optional(),
});
const exportRequest = z.object({
  resourceSpans: z.array(
    z.object({
      resource: z.object({ attributes: keyValues }).optional(),
      scopeSpans: z.array(z.object({ scope: z.object({ name: z.string() }).optional(), spans: z.array(span).optional() })).optional(),
    }),
  ),
});

/** An attribute's value as JSON gives it: a string, a number, a boolean or a list of them. */
export type Flat = string | number | boolean | null | Flat[];

function flat(value: unknown): Flat {
  const v = value as Record<string, unknown>;
  if ('stringValue' in v) return v.stringValue as string;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue as number;
  if ('boolValue' in v) return v.boolValue as boolean;
  if ('arrayValue' in v) return ((v.arrayValue as { values?: unknown[] }).values ?? []).map(flat);
  if ('kvlistValue' in v) return ((v.kvlistValue as { values?: { key: string; value: unknown }[] }).values ?? []).map((kv) => [kv.key, flat(kv.value)]);
  if ('bytesValue' in v) return v.bytesValue as string;
  return null;
}

function record(list: z.infer<typeof keyValues>): Record<string, Flat> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, flat(kv.value)]));
}

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Absent (or empty) for the root of a trace. */
  parentSpanId: string | undefined;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, Flat>;
  events: { name: string; attributes: Record<string, Flat> }[];
  links: { traceId: string; spanId: string; attributes: Record<string, Flat> }[];
  status: { code?: number | undefined; message?: string | undefined };
  resource: Record<string, Flat>;
  scope: string;
}

export interface OtlpReceiver {
  /** The traces URL, for OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. */
  url: string;
  spans: ReceivedSpan[];
  /** The raw bodies received, to search for what must never be sent. */
  bodies: string[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces' || !String(request.headers['content-type']).startsWith('application/json')) {
        response.writeHead(404).end();
        return;
      }
      const text = Buffer.concat(chunks).toString('utf8');
      bodies.push(text);
      const parsed = exportRequest.parse(JSON.parse(text));
      for (const resourceSpans of parsed.resourceSpans) {
        const resource = record(resourceSpans.resource?.attributes);
        for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
          for (const s of scopeSpans.spans ?? []) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId === '' ? undefined : s.parentSpanId,
              name: s.name,
              kind: s.kind,
              attributes: record(s.attributes),
              events: (s.events ?? []).map((e) => ({ name: e.name, attributes: record(e.attributes) })),
              links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId, attributes: record(l.attributes) })),
              status: s.status ?? {},
              resource,
              scope: scopeSpans.scope?.name ?? '',
            });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    bodies,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The spans from `span` up to its trace's root, `span` first. */
export function ancestry(spans: readonly ReceivedSpan[], span: ReceivedSpan): ReceivedSpan[] {
  const byId = new Map(spans.filter((s) => s.traceId === span.traceId).map((s) => [s.spanId, s]));
  const chain = [span];
  for (let at = span; at.parentSpanId !== undefined; ) {
    const parent = byId.get(at.parentSpanId);
    if (parent === undefined) break;
    chain.push(parent);
    at = parent;
  }
  return chain;
}
