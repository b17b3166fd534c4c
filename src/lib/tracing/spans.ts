import type { Attributes, Context, Link, Span, Tracer } from '@opentelemetry/api';
import type { SpanAttributes } from './attributes.ts';
import { ATTR } from './attributes.ts';

/**
 * The spans trainsync makes, at a few stable points (a job, a walk, a platform request,
 * a COPY and a commit, the provisioning pipeline's steps, an HTTP request). While tracing
 * is off (the default) nothing of OpenTelemetry is loaded: every helper here sees no
 * tracer and calls its function straight away; `import type` above is erased. When
 * src/lib/tracing/start.ts has started the SDK it hands this module the API and a tracer.
 */

type OtelApi = typeof import('@opentelemetry/api');

interface Tracing {
  api: OtelApi;
  tracer: Tracer;
}

let tracing: Tracing | undefined;

/** Called by start.ts once the SDK is registered, and with undefined when it is shut down. */
export function useTracer(next: Tracing | undefined): void {
  tracing = next;
}

/** Whether spans are being recorded in this process. */
export function tracingOn(): boolean {
  return tracing !== undefined;
}

export type SpanRole = 'internal' | 'client' | 'server';

function kindOf(api: OtelApi, role: SpanRole | undefined): number {
  return role === 'client' ? api.SpanKind.CLIENT : role === 'server' ? api.SpanKind.SERVER : api.SpanKind.INTERNAL;
}

function defined(attributes: SpanAttributes): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value;
  return out;
}

/**
 * What an error is, in a word: its code when it has one (`EMAIL_IN_USE`, `ECONNREFUSED`,
 * a Postgres SQLSTATE), else its class name. Never its message: a message may quote a
 * record, an address or a person's name.
 */
export function errorKind(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(code)) return code;
    const name = (error as { name?: unknown }).name;
    if (typeof name === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(name)) return name;
  }
  return 'Error';
}

function failed(api: OtelApi, span: Span, error: unknown): void {
  span.setStatus({ code: api.SpanStatusCode.ERROR });
  span.setAttribute(ATTR.errorType, errorKind(error));
}

/** `fn` in a new active span of the tracer's, ended when its promise settles; a rejection marks it failed. */
function spanAround<T>(on: Tracing, name: string, options: { attributes: SpanAttributes; role?: SpanRole | undefined; links?: Link[] }, fn: () => Promise<T>): Promise<T> {
  const spanOptions = { attributes: defined(options.attributes), kind: kindOf(on.api, options.role), ...(options.links ? { links: options.links } : {}) };
  return on.tracer.startActiveSpan(name, spanOptions, async (span) => {
    try {
      return await fn();
    } catch (error) {
      failed(on.api, span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * Runs `fn` inside a span named `name` (a child of the active one), ended when its promise
 * settles; a rejection marks the span failed with the error's kind. Off: `fn()`.
 */
export function inSpan<T>(name: string, attributes: SpanAttributes, fn: () => Promise<T>, role?: SpanRole): Promise<T> {
  const on = tracing;
  if (on === undefined) return fn();
  return spanAround(on, name, { attributes, role }, fn);
}

/** Adds attributes to the active span (learned after it started: a run's id, a plan's counts). */
export function annotate(attributes: SpanAttributes): void {
  tracing?.api.trace.getActiveSpan()?.setAttributes(defined(attributes));
}

/** The trace a piece of work belongs to, kept to continue it elsewhere (a batch that plans many requests' changes). */
export interface TraceContext {
  readonly context: Context;
}

/** The active trace context, to hand to later work; undefined while tracing is off. */
export function captureContext(): TraceContext | undefined {
  const on = tracing;
  return on === undefined ? undefined : { context: on.api.context.active() };
}

/**
 * Runs `fn` in a span for work done on behalf of several traces at once (a batch of SCIM
 * changes): a child of the first, linked to the others, so each request's trace reaches
 * the work done for it. Off: `fn()`; with no trace captured, the span starts one.
 */
export function inBatchSpan<T>(name: string, attributes: SpanAttributes, origins: readonly (TraceContext | undefined)[], fn: () => Promise<T>): Promise<T> {
  const on = tracing;
  if (on === undefined) return fn();
  const captured = origins.filter((o): o is TraceContext => o !== undefined);
  const parent = captured[0]?.context ?? on.api.ROOT_CONTEXT;
  const links: Link[] = [];
  for (const origin of captured.slice(1)) {
    const linked = on.api.trace.getSpanContext(origin.context);
    if (linked !== undefined && on.api.isSpanContextValid(linked)) links.push({ context: linked });
  }
  return on.api.context.with(parent, () => spanAround(on, name, { attributes, links }, fn));
}

/** A span opened at one moment and closed at another (an HTTP request, from its first hook to its answer). */
export interface OpenSpan {
  /** Runs `fn` with this span active, so what it starts becomes its children. */
  run<T>(fn: () => T): T;
  /** Renames it (once what it is became known), adds attributes, marks it failed when `failedWith` is given, and ends it. */
  end(attributes: SpanAttributes, options?: { name?: string; failedWith?: string | undefined }): void;
}

/** Opens a span that the caller ends; undefined while tracing is off. */
export function openSpan(name: string, attributes: SpanAttributes, role?: SpanRole): OpenSpan | undefined {
  const on = tracing;
  if (on === undefined) return undefined;
  const span = on.tracer.startSpan(name, { attributes: defined(attributes), kind: kindOf(on.api, role) });
  const context = on.api.trace.setSpan(on.api.context.active(), span);
  let ended = false;
  return {
    run: (fn) => on.api.context.with(context, fn),
    end(more, options = {}) {
      if (ended) return;
      ended = true;
      if (options.name !== undefined) span.updateName(options.name);
      span.setAttributes(defined(more));
      if (options.failedWith !== undefined) {
        span.setStatus({ code: on.api.SpanStatusCode.ERROR });
        span.setAttribute(ATTR.errorType, options.failedWith);
      }
      span.end();
    },
  };
}
