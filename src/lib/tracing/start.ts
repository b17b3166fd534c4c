import type { Telemetry } from 'bullmq';
import { errorMessage } from '../errors.ts';
import { maskUrl } from '../infra-errors.ts';
import { privateExporter, withoutHousekeeping } from './privacy.ts';
import type { TracingSettings } from './settings.ts';
import { useTracer } from './spans.ts';

/**
 * Starts the OpenTelemetry SDK when src/config.ts found traces asked for. Every package of
 * it is imported here, dynamically, so a process with traces off never loads one (the
 * imports above are of our own modules and of types). One SDK per process: a second
 * start (a test's second app) shares it, and it stops when the last one closes.
 */

/** What a running SDK gives the process. */
export interface Tracing {
  /** BullMQ's telemetry (bullmq-otel), for its queues, workers and flows: it carries a trace through Redis in the job's options. */
  telemetry: Telemetry;
  /** Sends what is waiting, stops the SDK once the last user has closed (bounded: a collector that never answers does not hold a command). */
  close(): Promise<void>;
}

/** Where the SDK says something went wrong (an export refused): a warning, at most every few minutes. */
export interface TracingLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** How long closing waits for the last spans to be sent. */
const CLOSE_TIMEOUT_MS = 3_000;
/** One warning per this long at most while exports keep failing. */
const WARN_EVERY_MS = 5 * 60_000;

interface Started {
  telemetry: Telemetry;
  stop(): Promise<void>;
  users: number;
}

let started: Promise<Started> | undefined;

async function startSdk(settings: TracingSettings, log: TracingLog): Promise<Started> {
  const [api, sdk, core, hooks, resources, bullmqOtel] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/core'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/resources'),
    import('bullmq-otel'),
  ]);
  const { OTLPTraceExporter } = settings.protocol === 'http/json' ? await import('@opentelemetry/exporter-trace-otlp-http') : await import('@opentelemetry/exporter-trace-otlp-proto');

  let lastWarned = Number.NEGATIVE_INFINITY;
  core.setGlobalErrorHandler((error) => {
    if (Date.now() - lastWarned < WARN_EVERY_MS) return;
    lastWarned = Date.now();
    log.warn({ endpoint: maskUrl(settings.url), reason: errorMessage(error) }, 'traces: could not send spans to the OTLP endpoint; spans are dropped meanwhile (said at most every 5 minutes)');
  });

  const fromVariable = settings.resourceAttributes === undefined ? {} : core.parseKeyPairsIntoRecord(settings.resourceAttributes);
  const resource = resources.resourceFromAttributes({
    ...fromVariable,
    'service.name': settings.serviceName ?? fromVariable['service.name'] ?? 'trainsync',
  });
  const ratio =
    settings.sampleRatio >= 1 ? new sdk.AlwaysOnSampler() : settings.sampleRatio <= 0 ? new sdk.AlwaysOffSampler() : new sdk.TraceIdRatioBasedSampler(settings.sampleRatio);
  const root = withoutHousekeeping(ratio, { drop: { decision: sdk.SamplingDecision.NOT_RECORD }, internalKind: api.SpanKind.INTERNAL });
  const exporter = privateExporter(new OTLPTraceExporter({ url: settings.url }));
  const provider = new sdk.TracerProvider({
    resource,
    sampler: settings.parentBased ? new sdk.ParentBasedSampler({ root }) : root,
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter, ...(settings.scheduleDelayMs === undefined ? {} : { scheduledDelayMillis: settings.scheduleDelayMs }) })],
  });
  const contextManager = new hooks.AsyncLocalStorageContextManager();
  api.context.setGlobalContextManager(contextManager);
  api.propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
  api.trace.setGlobalTracerProvider(provider);
  const tracer = provider.getTracer('trainsync');
  useTracer({ api, tracer });
  return {
    telemetry: new bullmqOtel.BullMQOtel({ tracerName: 'bullmq' }),
    users: 0,
    async stop() {
      useTracer(undefined);
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)));
      await Promise.race([provider.shutdown().catch(() => undefined), bound]);
      clearTimeout(timer);
      api.trace.disable();
      api.propagation.disable();
      api.context.disable();
    },
  };
}

/** Starts the SDK (or joins the one this process runs) with these settings. */
export async function startTracing(settings: TracingSettings, log: TracingLog): Promise<Tracing> {
  started ??= startSdk(settings, log);
  const sdk = await started.catch((error: unknown) => {
    started = undefined;
    throw error;
  });
  sdk.users += 1;
  let closed = false;
  return {
    telemetry: sdk.telemetry,
    async close() {
      if (closed) return;
      closed = true;
      sdk.users -= 1;
      if (sdk.users > 0) return;
      started = undefined;
      await sdk.stop();
    },
  };
}
