/**
 * Every span attribute trainsync's own spans set, by name. The names of the OpenTelemetry
 * semantic conventions are written out rather than imported from
 * `@opentelemetry/semantic-conventions`, so that nothing of OpenTelemetry loads while
 * tracing is off; test/tracing-units.test.ts holds them to that package's constants.
 *
 * The values are identifiers of configuration (an organisation's slug, a resource, a job's
 * name), counts, codes and route templates: never a person's data, a secret or a URL's query.
 * The exporter keeps these names (and BullMQ's harmless ones) and drops every other
 * attribute, whoever set it (src/lib/tracing/privacy.ts).
 */
export const ATTR = {
  // Semantic conventions (stable, except url.template: incubating).
  httpMethod: 'http.request.method',
  httpStatus: 'http.response.status_code',
  httpRoute: 'http.route',
  urlTemplate: 'url.template',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  errorType: 'error.type',
  dbSystem: 'db.system.name',
  dbOperation: 'db.operation.name',
  dbCollection: 'db.collection.name',
  // trainsync's own.
  org: 'trainsync.org',
  resource: 'trainsync.resource',
  job: 'trainsync.job.name',
  jobAttempt: 'trainsync.job.attempt',
  runId: 'trainsync.run.id',
  server: 'trainsync.server',
  scimResource: 'trainsync.scim.resource',
  source: 'trainsync.provisioning.source',
  batchSize: 'trainsync.batch.size',
  planActions: 'trainsync.plan.actions',
  planHeld: 'trainsync.plan.held',
  planRefused: 'trainsync.plan.refused',
  enqueued: 'trainsync.enqueued',
  platformAttempts: 'trainsync.platform.attempts',
  copyBytes: 'trainsync.copy.bytes',
} as const;

/** The value of an attribute of ours: a word, a count or a flag (undefined: left out). */
export type SpanAttributeValue = string | number | boolean | undefined;

/** Attributes of one of our spans, keyed by the names above. */
export type SpanAttributes = Partial<Record<(typeof ATTR)[keyof typeof ATTR], SpanAttributeValue>>;
