import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import * as semconv from '@opentelemetry/semantic-conventions';
import * as incubating from '@opentelemetry/semantic-conventions/incubating';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { ATTR } from '../src/lib/tracing/attributes.ts';
import { EXPORTED_ATTRIBUTES, exportableSpan, isHousekeeping } from '../src/lib/tracing/privacy.ts';
import { tracingSettings } from '../src/lib/tracing/settings.ts';
import { captureContext, errorKind, inSpan, openSpan, tracingOn } from '../src/lib/tracing/spans.ts';
import { pathTemplate } from '../src/platform/http.ts';

/** The decisions of tracing that need no collector: the variables, the names, what an exported span keeps. */

describe('the OTEL_* variables', () => {
  it('leave traces off unless an exporter or an endpoint is given, and OTEL_SDK_DISABLED=true always', () => {
    expect(tracingSettings({})).toBeUndefined();
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBeUndefined();
    expect(tracingSettings({ OTEL_SDK_DISABLED: 'TRUE', OTEL_TRACES_EXPORTER: 'otlp' })).toBeUndefined();
    expect(tracingSettings({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBeUndefined();
  });

  it('otlp alone sends protobuf to the local collector; an endpoint alone turns them on; the traces endpoint is taken as given', () => {
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp' })).toMatchObject({ url: 'http://localhost:4318/v1/traces', protocol: 'http/protobuf', sampleRatio: 1, parentBased: true });
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example:4318/' })).toMatchObject({ url: 'https://otel.example:4318/v1/traces' });
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:9999/custom' })).toMatchObject({ url: 'http://b:9999/custom' });
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' })).toMatchObject({ protocol: 'http/json' });
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: 0.25 })).toMatchObject({ sampleRatio: 0.25, parentBased: true });
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'always_off' })).toMatchObject({ sampleRatio: 0, parentBased: false });
    const config = loadConfig({ OTEL_TRACES_EXPORTER: 'OTLP', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'HTTP/JSON', OTEL_BSP_SCHEDULE_DELAY: '200', OTEL_SERVICE_NAME: 'etl-west' });
    expect(config.tracing).toMatchObject({ protocol: 'http/json', scheduleDelayMs: 200, serviceName: 'etl-west' });
  });

  it('refuses what trainsync cannot send, naming the variable and what would do', () => {
    const problem = (env: Record<string, string>): string => {
      try {
        loadConfig(env);
      } catch (error) {
        if (error instanceof ConfigError) return error.problems.join('\n');
        throw error;
      }
      throw new Error('accepted');
    };
    expect(problem({ OTEL_TRACES_EXPORTER: 'zipkin' })).toMatch(/^OTEL_TRACES_EXPORTER: got "zipkin"; expected otlp .*no "zipkin" exporter/);
    expect(problem({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toMatch(/^OTEL_EXPORTER_OTLP_PROTOCOL: got "grpc"; expected http\/protobuf or http\/json: .*4318/);
    expect(problem({ OTEL_EXPORTER_OTLP_ENDPOINT: 'otel-collector:4318' })).toMatch(/^OTEL_EXPORTER_OTLP_ENDPOINT: got "otel-collector:4318"; expected an http\(s\) URL/);
    expect(problem({ OTEL_TRACES_SAMPLER_ARG: '2' })).toMatch(/^OTEL_TRACES_SAMPLER_ARG: got "2"; expected at most 1/);
    // A collector URL that may carry a credential is never echoed.
    const withToken = problem({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'otlp://u:s3cr3t@c:4318/v1/traces?token=t0k' });
    expect(withToken).toMatch(/^OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: set but invalid/);
    expect(withToken).not.toMatch(/s3cr3t|t0k/);
  });
});

describe('attribute names', () => {
  it('are the semantic conventions\' own', () => {
    expect(ATTR.httpMethod).toBe(semconv.ATTR_HTTP_REQUEST_METHOD);
    expect(ATTR.httpStatus).toBe(semconv.ATTR_HTTP_RESPONSE_STATUS_CODE);
    expect(ATTR.httpRoute).toBe(semconv.ATTR_HTTP_ROUTE);
    expect(ATTR.urlTemplate).toBe(incubating.ATTR_URL_TEMPLATE);
    expect(ATTR.serverAddress).toBe(semconv.ATTR_SERVER_ADDRESS);
    expect(ATTR.serverPort).toBe(semconv.ATTR_SERVER_PORT);
    expect(ATTR.errorType).toBe(semconv.ATTR_ERROR_TYPE);
    expect(ATTR.dbSystem).toBe(semconv.ATTR_DB_SYSTEM_NAME);
    expect(ATTR.dbOperation).toBe(semconv.ATTR_DB_OPERATION_NAME);
    expect(ATTR.dbCollection).toBe(semconv.ATTR_DB_COLLECTION_NAME);
  });
});

describe('what an exported span keeps', () => {
  const span = (over: Partial<ReadableSpan>): ReadableSpan =>
    ({
      name: 'process provision',
      kind: 4,
      spanContext: () => ({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 }),
      startTime: [0, 0],
      endTime: [0, 1],
      duration: [0, 1],
      ended: true,
      status: { code: 2, message: 'EMAIL_IN_USE: ann@example.com is taken' },
      attributes: {},
      links: [],
      events: [],
      droppedAttributesCount: 0,
      droppedEventsCount: 0,
      droppedLinksCount: 0,
      ...over,
    }) as unknown as ReadableSpan;

  it('the attributes named, never a job id, a result, a failure\'s message or an exception\'s text; never a status message', () => {
    const exported = exportableSpan(
      span({
        attributes: { 'bullmq.job.id': 'create-user:ann@example.com', 'bullmq.job.name': 'create-user', 'bullmq.queue.name': 'provision', 'trainsync.org': 'acme', 'http.url': 'https://p/x?key=1' },
        events: [
          { name: 'job completed', time: [0, 0], attributes: { 'bullmq.job.result': '{"email":"ann@example.com"}' } },
          { name: 'exception', time: [0, 0], attributes: { 'exception.type': 'PlatformError', 'exception.message': 'ann@example.com', 'exception.stacktrace': 'at …' } },
        ],
        links: [{ context: { traceId: 'c'.repeat(32), spanId: 'd'.repeat(16), traceFlags: 1 }, attributes: { 'bullmq.job.key': 'create-user:ann@example.com' } }],
      }),
    );
    expect(exported.attributes).toEqual({ 'bullmq.job.name': 'create-user', 'bullmq.queue.name': 'provision', 'trainsync.org': 'acme' });
    expect(exported.events.map((e) => [e.name, e.attributes])).toEqual([
      ['job completed', {}],
      ['exception', { 'exception.type': 'PlatformError' }],
    ]);
    expect(exported.links[0]!.attributes).toEqual({});
    expect(exported.status).toEqual({ code: 2 });
    expect(exported.spanContext().spanId).toBe('b'.repeat(16));
    expect(JSON.stringify({ ...exported, spanContext: undefined })).not.toContain('ann@');
  });

  it('every attribute of ours is exported', () => {
    for (const name of Object.values(ATTR)) expect(EXPORTED_ATTRIBUTES.has(name), name).toBe(true);
  });
});

describe('names that carry nothing of a person', () => {
  it('a platform path as a span names it: words stay, ids and anything else become {id}, the query never', () => {
    expect(pathTemplate('users/3fa85f64-5717-4562-b3fc-2c963f66afa6/disable')).toBe('/api/v2/users/{id}/disable');
    expect(pathTemplate('users/ann@example.com')).toBe('/api/v2/users/{id}');
    expect(pathTemplate('results')).toBe('/api/v2/results');
    expect(pathTemplate('groups/12/users/Ann%20Smith')).toBe('/api/v2/groups/{id}/users/{id}');
  });

  it('an error in a word: its code, else its class; never its message', () => {
    expect(errorKind(Object.assign(new Error('ann@example.com is taken'), { code: 'EMAIL_IN_USE' }))).toBe('EMAIL_IN_USE');
    expect(errorKind(new TypeError('ann@example.com'))).toBe('TypeError');
    expect(errorKind(Object.assign(new Error('x'), { code: 'has spaces and ann@example.com' }))).toBe('Error');
    expect(errorKind('ann@example.com')).toBe('Error');
  });

  it('BullMQ\'s housekeeping (an empty queue polled, stalled jobs checked) starts no trace; its jobs\' operations do', () => {
    const INTERNAL = 0;
    const PRODUCER = 3;
    expect(isHousekeeping('getNextJob sync', INTERNAL, INTERNAL)).toBe(true);
    expect(isHousekeeping('moveStalledJobsToWait provision', INTERNAL, INTERNAL)).toBe(true);
    expect(isHousekeeping('add sync.sync-results', PRODUCER, INTERNAL)).toBe(false);
    expect(isHousekeeping('job sync-results', INTERNAL, INTERNAL)).toBe(false);
  });
});

describe('with traces off', () => {
  it('nothing is wrapped: a span helper hands back the very promise of the work, and nothing is captured or opened', async () => {
    expect(tracingOn()).toBe(false);
    const work = Promise.resolve(42);
    expect(inSpan('job x', { [ATTR.org]: 'acme' }, () => work)).toBe(work);
    expect(captureContext()).toBeUndefined();
    expect(openSpan('GET x', {})).toBeUndefined();
    expect(await work).toBe(42);
  });
});
