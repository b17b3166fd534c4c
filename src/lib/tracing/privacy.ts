import type { Attributes, Context, Link, SpanKind } from '@opentelemetry/api';
import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, Sampler, SamplingResult, SpanExporter, TimedEvent } from '@opentelemetry/sdk-trace';
import { ATTR } from './attributes.ts';

/**
 * What leaves the process. Spans are made by trainsync and by BullMQ, whose own attributes
 * include job ids (a create's is `create-user:<e-mail>`), a job's result and a failure's
 * message; an error's message may quote a record. So the exporter sends only attributes
 * named here, drops every status message, and keeps of an exception its type alone: what
 * reaches a collector is organisations, resources, job and queue names, counts, codes and
 * route templates, whatever a library set.
 */

/** BullMQ's attributes that name no person and hold no payload (queue and job names, counts, the worker's host:pid). */
const BULLMQ_KEPT = ['bullmq.queue.name', 'bullmq.queue.operation', 'bullmq.job.name', 'bullmq.job.attempts.made', 'bullmq.job.bulk.count', 'bullmq.worker.name', 'bullmq.flow.name'];

/** Every attribute name that may leave the process: ours (attributes.ts), BullMQ's harmless ones, an exception's type. */
export const EXPORTED_ATTRIBUTES: ReadonlySet<string> = new Set([...Object.values(ATTR), ...BULLMQ_KEPT, 'exception.type']);

/** The attributes whose names are in the list above. */
export function keptAttributes(attributes: Attributes): Attributes {
  const kept: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (EXPORTED_ATTRIBUTES.has(key)) kept[key] = value;
  return kept;
}

/** A finished span as it may be exported: its attributes, its events' and its links' filtered, its status without a message. */
export function exportableSpan(span: ReadableSpan): ReadableSpan {
  return {
    name: span.name,
    kind: span.kind,
    spanContext: () => span.spanContext(),
    parentSpanContext: span.parentSpanContext,
    startTime: span.startTime,
    endTime: span.endTime,
    status: { code: span.status.code },
    attributes: keptAttributes(span.attributes),
    links: span.links.map((link): Link => ({ context: link.context, ...(link.attributes ? { attributes: keptAttributes(link.attributes) } : {}) })),
    events: span.events.map((event): TimedEvent => ({ ...event, ...(event.attributes ? { attributes: keptAttributes(event.attributes) } : {}) })),
    duration: span.duration,
    ended: span.ended,
    resource: span.resource,
    instrumentationScope: span.instrumentationScope,
    droppedAttributesCount: span.droppedAttributesCount,
    droppedEventsCount: span.droppedEventsCount,
    droppedLinksCount: span.droppedLinksCount,
  };
}

/** An exporter that sends only exportable spans (above) through `exporter`. */
export function privateExporter(exporter: SpanExporter): SpanExporter {
  return {
    export: (spans: ReadableSpan[], done: (result: ExportResult) => void) => exporter.export(spans.map(exportableSpan), done),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/**
 * BullMQ's housekeeping (a worker polling an empty queue, checking for stalled jobs,
 * extending its locks) makes a span every few seconds per queue, each a trace of its own
 * that says nothing; inside a job's trace the same operations stay.
 */
const HOUSEKEEPING = new Set([
  'getNextJob', 'moveStalledJobsToWait', 'extendLocks', 'startStalledCheckTimer', 'close', 'pause', 'resume',
  'rateLimit', 'trimEvents', 'drain', 'clean', 'obliterate', 'promoteJobs', 'remove', 'removeDeduplicationKey', 'removeDebounceKey', 'updateJobProgress',
]);

/** Whether a span that starts a trace is BullMQ's housekeeping (its name's first word; an internal span). */
export function isHousekeeping(spanName: string, kind: SpanKind, internalKind: SpanKind): boolean {
  return kind === internalKind && HOUSEKEEPING.has(spanName.split(' ', 1)[0]!);
}

/** The SDK's values the sampler answers with (passed in: this module loads nothing of the SDK). */
export interface SamplingDecisions {
  drop: SamplingResult;
  internalKind: SpanKind;
}

/**
 * The sampler of traces that start here: BullMQ's housekeeping is not recorded, anything
 * else is left to `sampler` (the ratio `OTEL_TRACES_SAMPLER` asks for).
 */
export function withoutHousekeeping(sampler: Sampler, decisions: SamplingDecisions): Sampler {
  return {
    shouldSample(context: Context, traceId: string, spanName: string, spanKind: SpanKind, attributes: Attributes, links: Link[]): SamplingResult {
      if (isHousekeeping(spanName, spanKind, decisions.internalKind)) return decisions.drop;
      return sampler.shouldSample(context, traceId, spanName, spanKind, attributes, links);
    },
    toString: () => `WithoutBullMQHousekeeping{${sampler.toString()}}`,
  };
}
