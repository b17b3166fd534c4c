import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { DEFAULT_ORG, ORG_SLUG_RE } from '../settings/orgs-file.ts';
import { HttpError } from '../http/http-error.ts';
import { MAX_URL_BYTES, startHttpServer, type HttpServer, type HttpServerOptions, type ServerDefinition, type ServerPlugin } from '../http/server-factory.ts';
import { zodIssueOf, zodValidatorCompiler } from '../http/zod-schemas.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../runtime/log.ts';
import type { Metrics } from '../runtime/metrics.ts';
import type { JobQueue } from '../queue/job-queue.ts';
import type { OrgRef, OrgScope, OrgScopes } from '../warehouse/scope.ts';
import { enqueueResultLoads } from './enqueue.ts';
import { ENVELOPE_REQUIRED, EVENT_TYPES, planEvent, signedEventBody, typeLabel, type SignedEvent } from './events.ts';
import { signatureHeaderMatcher, signatureHeaderValues, verifySignature } from './signature.ts';
import { organisationGuids, type OrganisationCheck } from './organisation-guid.ts';
import { recordRefusal, type RefusalReason } from './refusals.ts';
import { startRefusalTally, type RefusalTally } from './refusal-tally.ts';
import { unstorableReason } from './unstorable.ts';
import { storeEvent, type StoredEvent } from './store.ts';
import { ATTR } from '../lib/tracing/attributes.ts';

/** The default organisation's path (today's, unchanged); every organisation also has `<this>/<slug>`. */
export const WEBHOOK_PATH = '/webhooks/platform';

/** The path an organisation's webhooks post to. */
export function webhookPathOf(slug: string): string {
  return slug === DEFAULT_ORG ? WEBHOOK_PATH : `${WEBHOOK_PATH}/${slug}`;
}

/** The organisation a path names: the bare path is `default`'s; undefined for any other path. */
export function orgOfPath(path: string): string | undefined {
  if (path === WEBHOOK_PATH || path === `${WEBHOOK_PATH}/`) return DEFAULT_ORG;
  if (!path.startsWith(`${WEBHOOK_PATH}/`)) return undefined;
  const slug = path.slice(WEBHOOK_PATH.length + 1).replace(/\/$/, '');
  return ORG_SLUG_RE.test(slug) ? slug : undefined;
}

/** An organisation that takes webhooks, with its decoded validation secrets. */
export interface WebhookOrg {
  slug: string;
  keys: readonly Buffer[];
}

/** How long the 2xx waits for the jobs to be queued; the sweep queues them later if Redis is slow or down. */
const ENQUEUE_WAIT_MS = 1_000;
/** At most one warning line per this long for refused signatures (each is counted in the metrics). */
const SIGNATURE_LOG_EVERY_MS = 10_000;

export interface WebhookReceiverDeps {
  config: Pick<Config, 'TRAINSYNC_WEBHOOK_PORT' | 'TRAINSYNC_WEBHOOK_HOST' | 'TRAINSYNC_WEBHOOK_SIGNATURE_HEADER' | 'TRAINSYNC_WEBHOOK_MAX_BODY_BYTES'> & {
    /** Every configured organisation (with a webhook secret or not): with more than one, an event must name its organisation. */
    orgs?: Config['orgs'];
  };
  /**
   * The organisations that take webhooks, each with its own secrets (the default
   * organisation's: TRAINSYNC_WEBHOOK_SECRET; the others': webhookSecret in the orgs file).
   */
  orgs: readonly WebhookOrg[];
  /** Each organisation's events are stored through its scoped handle. */
  scopes: Pick<OrgScopes, 'scope' | 'acrossOrganisations'>;
  queue: Pick<JobQueue, 'add'>;
  metrics: Metrics;
  log: Logger;
  /** Where signature refusals are counted (the service's, to flush it on demand); the receiver starts its own without. */
  refusalTally?: RefusalTally;
}

export type WebhookReceiver = HttpServer;

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** The eventType of an unverified body, only to tell a TEST_EVENT (which is never signed). */
function peekEventType(bytes: Buffer): string | undefined {
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    if (typeof value === 'object' && value !== null && 'eventType' in value && typeof value.eventType === 'string') return value.eventType;
  } catch {
    // not JSON
  }
  return undefined;
}

/**
 * `POST /webhooks/platform/<slug>` (and `/webhooks/platform` for `default`): the
 * platform's signed events of one organisation, checked with that organisation's
 * secrets only. A 2xx is sent only once the event is stored (a retried delivery of a
 * stored event gets 200 again and nothing else happens); 401 for a missing or bad
 * signature, another organisation's included (counted, and recorded without its
 * body); 403 for a signed envelope whose organisationId is not the organisation's GUID
 * (recorded with both GUIDs); 404 for a path of no organisation that takes webhooks;
 * 413 over the body limit; 503 when the database cannot store it (the platform
 * retries for up to 3 days). TEST_EVENT always gets 200: the platform sends it
 * unsigned when a webhook is added, and needs the 2xx to create the webhook.
 */
export function webhookServer(deps: WebhookReceiverDeps): ServerDefinition {
  const { config, metrics, log } = deps;
  const isSignatureHeader = signatureHeaderMatcher(config.TRAINSYNC_WEBHOOK_SIGNATURE_HEADER);
  let refusedSinceLog = 0;
  let lastRefusalLog = 0;
  const orgs = new Map(deps.orgs.map((org) => [org.slug, org]));
  const guids = organisationGuids(deps.scopes);
  const secretName = ({ org }: OrgRef): string => (org === DEFAULT_ORG ? 'TRAINSYNC_WEBHOOK_SECRET' : `the webhookSecret of organisation ${org}`);

  const tally = deps.refusalTally ?? startRefusalTally({ log });
  // With several organisations configured, an event that names none could be any of theirs.
  const requireOrganisationId = (config.orgs?.length ?? deps.orgs.length) > 1;

  /** Refuses a delivery to the path of the organisation of `scope`. */
  const refuse = async (scope: OrgScope, reason: RefusalReason, remote: string | undefined, detail?: string): Promise<Answer> => {
    const { org } = scope;
    if (reason === 'organisation-mismatch') {
      metrics.webhookReceived.inc({ org, type: 'other', outcome: 'organisation-mismatch' });
      // Signed with the organisation's secret, so only its holder can cause one: a row each, for the console's Webhooks page.
      // The answer does not depend on it being stored.
      await recordRefusal(scope, { reason, header: config.TRAINSYNC_WEBHOOK_SIGNATURE_HEADER, remote, ...(detail ? { detail } : {}) }).catch((error: unknown) =>
        log.warn({ err: error, org }, 'could not record a refused webhook delivery'),
      );
    } else {
      // Anyone can send one: counted (the metric, and a per-minute sum for the console), never a row each.
      metrics.webhookSignatureFailures.inc({ org, reason });
      tally.note(scope, reason, config.TRAINSYNC_WEBHOOK_SIGNATURE_HEADER, remote);
    }
    if (reason === 'organisation-mismatch') {
      // Signed with this organisation's secret: a set-up mistake worth a line each time.
      log.warn({ org, remote, detail }, 'webhook refused (403): its organisationId is not this organisation\'s');
      return { status: 403, body: { error: `organisationId does not match organisation ${org}` } };
    }
    refusedSinceLog += 1;
    const now = Date.now();
    if (now - lastRefusalLog >= SIGNATURE_LOG_EVERY_MS) {
      log.warn(
        { org, reason, refused: refusedSinceLog, remote, header: config.TRAINSYNC_WEBHOOK_SIGNATURE_HEADER },
        `webhook refused (401): signature missing or not made with ${secretName(scope)}`,
      );
      lastRefusalLog = now;
      refusedSinceLog = 0;
    }
    return { status: 401, body: { error: reason === 'missing' ? 'signature missing' : 'signature invalid' } };
  };

  /**
   * The routes' preValidation: the signature, over the exact bytes received (the server hands
   * bodies over raw, within TRAINSYNC_WEBHOOK_MAX_BODY_BYTES), with this organisation's secrets
   * only (a body signed with another organisation's is invalid here). An unsigned TEST_EVENT is
   * acknowledged; any other body without a valid signature is refused before anything reads it.
   */
  const checkSignature = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    // The organisation is chosen here, by the path the delivery came to.
    const scope = deps.scopes.scope(request.webhookOrg!.slug);
    const { org } = scope;
    const req = request.raw;
    const bytes = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    request.body = bytes;
    const signature = verifySignature(bytes, signatureHeaderValues(req.rawHeaders, isSignatureHeader), request.webhookOrg!.keys);
    if (signature === 'valid') return undefined;
    if (peekEventType(bytes) === EVENT_TYPES.test) {
      // Nothing in it to process, so nothing to trust: acknowledged, not stored.
      metrics.webhookReceived.inc({ org, type: EVENT_TYPES.test, outcome: 'test-unsigned' });
      log.info({ org }, 'webhook TEST_EVENT received (unsigned): acknowledged');
      return send(reply, { status: 200, body: { status: 'test' } });
    }
    return send(reply, await refuse(scope, signature, req.socket.remoteAddress));
  };

  /** A signed body its schema refused (not JSON, no usable eventId or eventType): counted, and the envelope's problem logged; the 400 is the schema's. */
  const malformed = (request: FastifyRequest, error: FastifyError): void => {
    const org = request.webhookOrg?.slug;
    if (org === undefined || error.validationContext !== 'body') return;
    metrics.webhookReceived.inc({ org, type: 'other', outcome: 'malformed' });
    const issue = zodIssueOf(error.validation?.[0]);
    if (issue?.code === 'custom' && issue.message === ENVELOPE_REQUIRED) {
      log.warn({ org, field: issue.params?.field, problem: issue.params?.problem }, 'signed webhook without a usable eventId or eventType: refused (400)');
    }
  };

  /** A signed event, its body checked by its schema (signedEventBody): its organisation's GUID checked, stored, its results queued. */
  const receive = async (request: FastifyRequest, target: WebhookOrg, { json, envelope }: SignedEvent): Promise<Answer> => {
    // The organisation is chosen here, by the path the delivery came to.
    const scope = deps.scopes.scope(target.slug);
    const { org } = scope;
    const req = request.raw;
    const unnamed = envelope.organisationId === null || envelope.organisationId === undefined || envelope.organisationId.trim() === '';
    if (unnamed && requireOrganisationId && envelope.eventType !== EVENT_TYPES.test) {
      // Several organisations: an event that names none cannot be told from another organisation's sent to the wrong path.
      return await refuse(scope, 'organisation-mismatch', req.socket.remoteAddress, 'organisationId missing: required when several organisations are configured');
    }
    let guid: OrganisationCheck;
    try {
      guid = await guids.check(scope, envelope.organisationId);
    } catch (error) {
      log.error({ err: error, org, eventId: envelope.eventId }, 'could not check a webhook\'s organisationId: answered 503, the platform delivers it again');
      return { status: 503, body: { error: 'not stored; deliver again later' }, headers: { 'retry-after': '30' } };
    }
    if (!guid.ok) return await refuse(scope, 'organisation-mismatch', req.socket.remoteAddress, guid.detail);
    if (guid.learned) log.info({ org, organisationId: envelope.organisationId }, 'learned the organisation\'s platform GUID from its first verified webhook');
    const plan = planEvent(envelope);
    const type = typeLabel(envelope.eventType);
    let stored: StoredEvent;
    try {
      stored = await storeEvent(scope, envelope, JSON.stringify(json), plan);
    } catch (error) {
      const unstorable = unstorableReason(error);
      if (unstorable !== undefined) {
        // The same bytes would fail the same way on every retry: a 4xx, so the platform stops retrying.
        metrics.webhookReceived.inc({ org, type, outcome: 'malformed' });
        log.warn({ org, problem: unstorable }, 'signed webhook the database cannot store: refused (422)');
        return { status: 422, body: { error: `the event cannot be stored: ${unstorable}` } };
      }
      log.error({ err: error, org, eventId: envelope.eventId }, 'could not store a webhook event: answered 503, the platform delivers it again');
      return { status: 503, body: { error: 'not stored; deliver again later' }, headers: { 'retry-after': '30' } };
    }
    metrics.webhookReceived.inc({ org, type, outcome: stored.stored ? 'stored' : 'duplicate' });
    if (!stored.stored) return { status: 200, body: { status: 'duplicate', eventId: stored.eventId } };
    if (plan.kind === 'done') {
      const line = { org, eventId: stored.eventId, eventType: envelope.eventType, outcome: plan.outcome };
      if (plan.outcome === 'invalid') log.warn({ ...line, problem: plan.error }, 'webhook event stored, but its data is unusable: left to the nightly sync');
      else log.info(line, 'webhook event stored; nothing to load');
      return { status: 200, body: { status: 'stored', eventId: stored.eventId } };
    }
    // Stored: the 2xx no longer depends on Redis. The sweep queues what this misses.
    // Queued under this organisation: its job reads the result with this organisation's key.
    const queued = enqueueResultLoads(deps.queue, scope, plan.resultIds).then(
      () => true,
      (error: unknown) => {
        log.warn({ err: error, org, eventId: stored.eventId }, 'could not queue a webhook result; the sweep queues it');
        return false;
      },
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([queued, new Promise((resolve) => (timer = setTimeout(resolve, ENQUEUE_WAIT_MS)))]);
    clearTimeout(timer);
    log.debug({ org, eventId: stored.eventId, eventType: envelope.eventType, results: plan.resultIds.length }, 'webhook event stored');
    return { status: 200, body: { status: 'stored', eventId: stored.eventId } };
  };

  /** Before the body is read: a path of no organisation that takes webhooks (404), a method but POST (405). */
  const gate = (request: FastifyRequest, reply: FastifyReply): WebhookOrg | undefined => {
    const path = request.url.split('?')[0]!;
    const slug = orgOfPath(path);
    const target = slug === undefined ? undefined : orgs.get(slug);
    if (target === undefined) {
      // The configured slugs are not listed: this answer goes to anyone who asks.
      const error = slug === undefined ? `not found: the platform posts to ${WEBHOOK_PATH}/<organisation>` : `not found: organisation ${slug} takes no webhooks here`;
      send(reply, { status: 404, body: { error } });
      return undefined;
    }
    if (request.method !== 'POST') {
      send(reply, { status: 405, body: { error: 'POST only' }, headers: { allow: 'POST' } });
      return undefined;
    }
    return target;
  };

  const plugin: ServerPlugin = async (server) => {
    server.decorateRequest('webhookOrg', null);
    // The body's schema is zod (events.ts); a signed body it refuses is answered 400 with its words.
    server.setValidatorCompiler(zodValidatorCompiler);
    server.setSchemaErrorFormatter((errors) => new HttpError(400, zodIssueOf(errors[0])?.message ?? 'the body is not an event'));
    // The counts of refused signatures are written before the server is gone.
    server.addHook('onClose', async () => (deps.refusalTally ? tally.flush() : tally.close()));
    server.addHook('onRequest', (request, reply, done) => {
      const target = gate(request, reply);
      if (target === undefined) return;
      request.webhookOrg = target;
      done();
    });
    server.addHook('onError', async (request, _reply, error) => malformed(request, error));
    for (const url of [WEBHOOK_PATH, `${WEBHOOK_PATH}/:org`]) {
      server.post(url, {
        // The gate has chosen the organisation from the path as sent; the parameter is only its slug.
        schema: { params: z.object({ org: z.string().optional() }), body: signedEventBody },
        preValidation: checkSignature,
        // A throw is answered 500 by the server's error mapping, without its message.
        handler: async (request, reply) => send(reply, await receive(request, request.webhookOrg!, request.body as SignedEvent)),
      });
    }
  };
  return { options: webhookServerOptions(deps), plugin };
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the webhook receiver's gate (src/webhooks/receiver.ts) before the body is read. */
    webhookOrg: WebhookOrg | null;
  }
}

function send(reply: FastifyReply, answer: Answer): FastifyReply {
  reply.code(answer.status);
  if (answer.headers) reply.headers(answer.headers);
  // A Buffer, so Fastify sends the content type as given (`application/json`, as the receiver always has).
  return reply.type('application/json').send(Buffer.from(JSON.stringify(answer.body)));
}

/** The server the receiver runs on: its port, its body limit, its errors as `{"error": …}`. */
function webhookServerOptions(deps: Pick<WebhookReceiverDeps, 'config' | 'log'>): HttpServerOptions {
  return {
    name: 'webhook receiver',
    port: deps.config.TRAINSYNC_WEBHOOK_PORT,
    host: deps.config.TRAINSYNC_WEBHOOK_HOST,
    bodyLimit: { bytes: deps.config.TRAINSYNC_WEBHOOK_MAX_BODY_BYTES, setting: 'TRAINSYNC_WEBHOOK_MAX_BODY_BYTES' },
    rawBodies: true,
    // `/webhooks/platform/` is `/webhooks/platform`; a parameter as long as the URL allows (the gate refuses a slug that is not one).
    router: { ignoreTrailingSlash: true, maxParamLength: MAX_URL_BYTES },
    errorBody: ({ detail }) => ({ type: 'application/json', body: JSON.stringify({ error: detail }) }),
    faultDetail: 'not stored; deliver again later',
    notFoundDetail: `not found: the platform posts to ${WEBHOOK_PATH}/<organisation>`,
    log: deps.log,
    // Traces on: a span per delivery, named by its route (never the path as sent), with its organisation.
    traced: { attributes: (request) => ({ [ATTR.org]: request.webhookOrg?.slug }) },
  };
}

/** Starts the receiver where TRAINSYNC_WEBHOOK_PORT and TRAINSYNC_WEBHOOK_HOST say. Closing lets requests in flight finish (their events are stored and acknowledged). */
export async function startWebhookReceiver(deps: WebhookReceiverDeps): Promise<WebhookReceiver> {
  const { config, log } = deps;
  const server = await startHttpServer(webhookServer(deps));
  log.info({ port: server.port, host: config.TRAINSYNC_WEBHOOK_HOST, paths: deps.orgs.map((o) => webhookPathOf(o.slug)), signatureHeader: config.TRAINSYNC_WEBHOOK_SIGNATURE_HEADER }, 'webhook receiver listening');
  return server;
}
