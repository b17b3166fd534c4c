/**
 * Whether and where trainsync sends traces, from the standard OpenTelemetry variables
 * (src/config.ts reads them; docs/operator.md, "Traces"). Off unless asked for: by
 * `OTEL_TRACES_EXPORTER=otlp`, or by an OTLP endpoint with no exporter named; never
 * while `OTEL_SDK_DISABLED=true`.
 */

/** The OTLP encodings trainsync sends: protobuf (the specification's default) or JSON, both over HTTP. */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

export const TRACE_SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];

/** Where a collector listens when only `OTEL_TRACES_EXPORTER=otlp` is given (the specification's default). */
export const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318';

export interface TracingSettings {
  /** The traces URL in full (`…/v1/traces`). */
  url: string;
  protocol: OtlpProtocol;
  /** `service.name` of every span's resource (`OTEL_SERVICE_NAME`); unset: the one `OTEL_RESOURCE_ATTRIBUTES` names, else `trainsync`. */
  serviceName?: string | undefined;
  /** `OTEL_RESOURCE_ATTRIBUTES` as given (`key=value,…`), read by the SDK when it starts. */
  resourceAttributes?: string | undefined;
  /** Share of new traces recorded (0 to 1); a trace begun elsewhere follows its parent's choice when `parentBased`. */
  sampleRatio: number;
  parentBased: boolean;
  /** How long spans wait to be sent together (`OTEL_BSP_SCHEDULE_DELAY`); the SDK's 5 s when unset. */
  scheduleDelayMs?: number | undefined;
}

/** The OTEL_* values src/config.ts has checked one by one. */
export interface OtelVariables {
  OTEL_SDK_DISABLED?: string | undefined;
  OTEL_TRACES_EXPORTER?: 'otlp' | 'none' | undefined;
  OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string | undefined;
  OTEL_EXPORTER_OTLP_PROTOCOL?: OtlpProtocol | undefined;
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?: OtlpProtocol | undefined;
  OTEL_SERVICE_NAME?: string | undefined;
  OTEL_RESOURCE_ATTRIBUTES?: string | undefined;
  OTEL_TRACES_SAMPLER?: TraceSampler | undefined;
  OTEL_TRACES_SAMPLER_ARG?: number | undefined;
  OTEL_BSP_SCHEDULE_DELAY?: number | undefined;
}

/**
 * `OTEL_TRACES_EXPORTER`: a comma-separated list of `otlp` and `none` (`none` alone is off).
 * Other exporters (console, zipkin) are not shipped: `{ problem }` says so.
 */
export function parseTracesExporter(value: string): 'otlp' | 'none' | { problem: string } {
  const names = value.split(',').map((name) => name.trim().toLowerCase()).filter((name) => name !== '');
  const other = names.find((name) => name !== 'otlp' && name !== 'none');
  if (other !== undefined || names.length === 0) {
    return { problem: `otlp (send traces over OTLP/HTTP) or none; trainsync ships no "${other ?? value}" exporter: point an OpenTelemetry collector at it instead` };
  }
  return names.includes('otlp') ? 'otlp' : 'none';
}

/** What `OTEL_EXPORTER_OTLP_PROTOCOL` may say, in words (gRPC is not shipped). */
export const OTLP_PROTOCOL_EXPECTED = 'http/protobuf or http/json: trainsync sends OTLP over HTTP only (a collector\'s port 4318, not its gRPC port 4317)';

/** The traces URL: the per-signal endpoint as given, else the base endpoint with `/v1/traces` appended. */
export function tracesUrl(base: string | undefined, traces: string | undefined): string {
  if (traces !== undefined) return traces;
  return `${(base ?? DEFAULT_OTLP_ENDPOINT).replace(/\/+$/, '')}/v1/traces`;
}

/** What the variables ask for: settings when traces are on, undefined when off (the default). */
export function tracingSettings(vars: OtelVariables): TracingSettings | undefined {
  if (vars.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const endpointGiven = vars.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined || vars.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined;
  const exporter = vars.OTEL_TRACES_EXPORTER ?? (endpointGiven ? 'otlp' : 'none');
  if (exporter !== 'otlp') return undefined;
  const sampler = vars.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on';
  const ratio = sampler.endsWith('always_on') ? 1 : sampler.endsWith('always_off') ? 0 : (vars.OTEL_TRACES_SAMPLER_ARG ?? 1);
  return {
    url: tracesUrl(vars.OTEL_EXPORTER_OTLP_ENDPOINT, vars.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
    protocol: vars.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? vars.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    serviceName: vars.OTEL_SERVICE_NAME,
    resourceAttributes: vars.OTEL_RESOURCE_ATTRIBUTES,
    sampleRatio: ratio,
    parentBased: sampler.startsWith('parentbased_'),
    scheduleDelayMs: vars.OTEL_BSP_SCHEDULE_DELAY,
  };
}
