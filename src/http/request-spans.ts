import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { ATTR, type SpanAttributes } from '../lib/tracing/attributes.ts';
import { openSpan, type OpenSpan } from '../lib/tracing/spans.ts';

/**
 * What a server adds to its requests' spans: the attributes its own gate has learned (the
 * organisation, the resource), read once the request is answered. The span is named by the
 * route's template (`/scim/v2/{org}/Users/{id}`), never by the path as sent, which may carry an
 * id, nor by its query.
 */
export interface RequestTracing {
  attributes?(request: FastifyRequest): SpanAttributes;
}

/** The route a request took, as a template (`:id` → `{id}`); `unrouted` for a path no route takes. */
export function routeTemplate(request: FastifyRequest): string {
  const template = request.routeOptions.url;
  return template === undefined ? 'unrouted' : template.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

const SPAN = Symbol('trainsync.request-span');
type WithSpan = FastifyRequest & { [SPAN]?: OpenSpan };

/**
 * A server span per request, from its first hook to its answer (two hooks rather than
 * @fastify/otel, which brings the instrumentation machinery and the SDK 2 packages for the
 * same two hooks). Fastify reads a body on the socket's events, outside the hook that opened
 * the span, so each route's handler is run inside it: what the handler starts (a plan, a
 * queued job, a platform call) joins the request's trace. Nothing is added while tracing is off.
 */
export function traceRequests(server: FastifyInstance, serverName: string, naming: RequestTracing): void {
  server.addHook('onRequest', (request: WithSpan, _reply, done) => {
    const span = openSpan(`${request.method} ${serverName}`, { [ATTR.httpMethod]: request.method, [ATTR.server]: serverName }, 'server');
    if (span === undefined) {
      done();
      return;
    }
    request[SPAN] = span;
    span.run(done);
  });
  const end = (request: WithSpan, reply: FastifyReply): void => {
    const span = request[SPAN];
    if (span === undefined) return;
    const route = routeTemplate(request);
    const status = reply.statusCode;
    span.end(
      { [ATTR.httpRoute]: route, [ATTR.httpStatus]: status, ...naming.attributes?.(request) },
      { name: `${request.method} ${route}`, failedWith: status >= 500 ? String(status) : undefined },
    );
  };
  server.addHook('onResponse', (request, reply, done) => {
    end(request, reply);
    done();
  });
  // A client that went away: the span ends all the same.
  server.addHook('onRequestAbort', (request, done) => {
    (request as WithSpan)[SPAN]?.end({ [ATTR.httpRoute]: routeTemplate(request), ...naming.attributes?.(request) }, { failedWith: 'aborted' });
    done();
  });
  server.addHook('onRoute', (route) => {
    const handler = route.handler as RouteHandlerMethod;
    route.handler = function (this: FastifyInstance, request: WithSpan, reply: FastifyReply) {
      const span = request[SPAN];
      return span === undefined ? handler.call(this, request, reply) : span.run(() => handler.call(this, request, reply));
    } as RouteHandlerMethod;
  });
}
