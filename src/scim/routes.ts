import http from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { groupCreateBody, groupReplaceBody, patchOpBody, userBody } from './bodies.ts';
import { LIST_SCHEMA, resourceTypes, schemas, serviceProviderConfig } from './discovery.ts';
import { notFound, ScimError } from './errors.ts';
import { createGroup, deleteGroup, getGroup, patchGroup, replaceGroup, searchGroups } from './groups.ts';
import { checkJsonLimits } from './json-limits.ts';
import { createUser, deleteUser, getUser, patchUser, replaceUser, searchUsers, type ResourceContext, type ScimAnswer } from './users.ts';

/**
 * SCIM's resources as Fastify routes, under `/scim/v2/:org` (server.ts routes the bare
 * `/scim/v2/…` of the bare organisation there too): each endpoint's methods with their schemas
 * (the path's parameters; a body's, bodies.ts), and every other method on a known path answered
 * 405 with `Allow`. The router matches paths case-insensitively (Entra asks for `/users`; ids keep
 * their case), and Microsoft's `serviceConfiguration` is the ServiceProviderConfig. The gate in
 * server.ts has run before any of them: the request's organisation is served and its token valid.
 */

/** The resources named in a 404 for a path that names none. */
const RESOURCE_NAMES = 'Users, Groups, ServiceProviderConfig, ResourceTypes, Schemas';

/** What the routes are given: each request's context (its organisation's, with its base URL), the body limit (in the ServiceProviderConfig), how an answer is sent. */
export interface ScimRoutesDeps {
  contextOf(request: FastifyRequest): ResourceContext;
  maxBodyBytes: number;
  send(request: FastifyRequest, reply: FastifyReply, answer: ScimAnswer): FastifyReply;
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** One method of an endpoint: its body's schema, if it takes one, and what it answers. */
interface Operation<Body = unknown> {
  body?: z.ZodType<Body>;
  answer(ctx: ResourceContext, request: ScimRequest<Body>): Promise<ScimAnswer> | ScimAnswer;
}

/** A request as an operation sees it: the path's id (decoded, its case kept), the query, the checked body. */
interface ScimRequest<Body> {
  id: string;
  query: URLSearchParams;
  body: Body;
}

/** An endpoint's methods, in the order `Allow` names them. */
type Endpoint = Partial<Record<Method, Operation<never>>>;

const operation = <Body>(op: Operation<Body>): Operation<never> => op as Operation<never>;

const list = (resources: unknown[]) => ({ schemas: [LIST_SCHEMA], totalResults: resources.length, startIndex: 1, itemsPerPage: resources.length, Resources: resources });

function endpoints(maxBodyBytes: number): Record<string, Endpoint> {
  // An id after it is ignored, as it always was.
  const config: Endpoint = { GET: operation({ answer: (ctx) => ({ status: 200, body: serviceProviderConfig(ctx.base, maxBodyBytes) }) }) };
  const discovery = (all: (base: string) => Array<{ id: string }>, what: string): { list: Endpoint; one: Endpoint } => ({
    list: { GET: operation({ answer: (ctx) => ({ status: 200, body: list(all(ctx.base)) }) }) },
    one: {
      GET: operation({
        answer: (ctx, { id }) => {
          const one = all(ctx.base).find((r) => r.id === id);
          if (!one) throw notFound(`no ${what} ${id}`);
          return { status: 200, body: one };
        },
      }),
    },
  });
  const types = discovery(resourceTypes, 'resource type');
  const schemaList = discovery(schemas, 'schema');
  return {
    '/ServiceProviderConfig': config,
    '/ServiceProviderConfig/:id': config,
    // Microsoft's reference collection's name for it.
    '/serviceConfiguration': config,
    '/serviceConfiguration/:id': config,
    '/ResourceTypes': types.list,
    '/ResourceTypes/:id': types.one,
    '/Schemas': schemaList.list,
    '/Schemas/:id': schemaList.one,
    '/Users': {
      GET: operation({ answer: (ctx, { query }) => searchUsers(ctx, query) }),
      POST: operation({ body: userBody, answer: (ctx, { body }) => createUser(ctx, body) }),
    },
    '/Users/:id': {
      GET: operation({ answer: (ctx, { id, query }) => getUser(ctx, id, query) }),
      PUT: operation({ body: userBody, answer: (ctx, { id, body }) => replaceUser(ctx, id, body) }),
      PATCH: operation({ body: patchOpBody, answer: (ctx, { id, body }) => patchUser(ctx, id, body) }),
      DELETE: operation({ answer: (ctx, { id }) => deleteUser(ctx, id) }),
    },
    '/Groups': {
      GET: operation({ answer: (ctx, { query }) => searchGroups(ctx, query) }),
      POST: operation({ body: groupCreateBody, answer: (ctx, { body }) => createGroup(ctx, body) }),
    },
    '/Groups/:id': {
      GET: operation({ answer: (ctx, { id, query }) => getGroup(ctx, id, query) }),
      PUT: operation({ body: groupReplaceBody, answer: (ctx, { id, body }) => replaceGroup(ctx, id, body) }),
      PATCH: operation({ body: patchOpBody, answer: (ctx, { id, body }) => patchGroup(ctx, id, body) }),
      DELETE: operation({ answer: (ctx, { id }) => deleteGroup(ctx, id) }),
    },
  };
}

/** The path's parameters: the organisation (the gate has chosen it already) and, on one resource's path, its id. */
const params = z.object({ org: z.string(), id: z.string().optional() });

/**
 * A body route's preValidation: the body as received (the server hands every body over as bytes,
 * within its limit) read as JSON, before its schema checks it. 400 invalidSyntax when it is
 * missing or not JSON; 400 when json-limits.ts refuses it (NUL, lone surrogates, nesting).
 */
async function readJson(request: FastifyRequest): Promise<void> {
  const raw = request.body;
  if (!Buffer.isBuffer(raw) || raw.length === 0) throw new ScimError(400, 'a JSON body is required', 'invalidSyntax');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch (error) {
    throw new ScimError(400, `the body is not JSON: ${(error as Error).message}`, 'invalidSyntax');
  }
  checkJsonLimits(parsed);
  request.body = parsed;
}

/** Every method Node's parser reads but CONNECT (answered on the socket by the server factory): on a known path, all but its own are 405. */
export const ROUTED_METHODS = http.METHODS.filter((method) => method !== 'CONNECT');

/** The resource routes, registered under the organisation's prefix. */
export function scimRoutes(deps: ScimRoutesDeps) {
  return async (server: FastifyInstance): Promise<void> => {
    for (const [url, endpoint] of Object.entries(endpoints(deps.maxBodyBytes))) {
      const own = Object.keys(endpoint) as Method[];
      for (const method of own) {
        const op = endpoint[method]!;
        server.route({
          method,
          url,
          schema: { params, ...(op.body ? { body: op.body } : {}) },
          ...(op.body ? { preValidation: readJson } : {}),
          handler: async (request, reply) => {
            const { id = '' } = request.params as z.output<typeof params>;
            const answer = await op.answer(deps.contextOf(request), { id, query: request.scim!.url.searchParams, body: request.body as never });
            return deps.send(request, reply, answer);
          },
        });
      }
      const allowed = own.join(', ');
      server.route({
        method: ROUTED_METHODS.filter((method) => !own.includes(method as Method)),
        url,
        handler: async (request) => {
          throw new ScimError(405, `${request.method} is not supported here; allowed: ${allowed}`, undefined, { allow: allowed });
        },
      });
    }
  };
}

/** A path of a served organisation that names no endpoint: 404, naming the resources when it names no resource at all. */
export function noSuchEndpoint(request: FastifyRequest): never {
  const { url, rest } = request.scim!;
  // Below a resource's id there is nothing (`/Users/<id>/x`): the path alone.
  throw notFound(rest.length > 2 ? `no such endpoint: ${url.pathname}` : `no such endpoint: ${url.pathname} (${RESOURCE_NAMES})`);
}
