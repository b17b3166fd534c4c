import type { Reply, RouteRequest } from './reply.ts';
import { deleteGroupMember, deleteUser, patchAccess, postGroupMember, postLogin, postPassword, postUser, putUser } from './routes-provisioning.ts';
import { getCourses, getFilters, getGroups, getResultById, getResults, getSeats, getUsers } from './routes-reporting.ts';
import type { Runtime } from './runtime.ts';

export interface Route {
  method: string;
  /** The path with named parameters, used in request summaries. */
  template: string;
  re: RegExp;
  /** undefined => 404 (an endpoint this platform does not offer). */
  handle(rt: Runtime, req: RouteRequest): Reply | undefined;
}

const SEG = '([^/]+)';

/** Paths match case-insensitively and with an optional trailing slash, as ASP.NET routing does. */
function route(method: string, template: string, handle: Route['handle']): Route {
  const pattern = template.replace(/\{[^}]+\}/g, SEG);
  return { method, template, re: new RegExp(`^${pattern}/?$`, 'i'), handle };
}

export const ROUTES: readonly Route[] = [
  route('GET', '/api/v2/results', getResults),
  route('GET', '/api/v2/results/{resultId}', getResultById),
  route('GET', '/api/v2/courses', getCourses),
  route('GET', '/api/v2/filters', getFilters),
  route('GET', '/api/v2/groups', getGroups),
  route('GET', '/api/v2/users/seats', (rt) => getSeats(rt)),
  route('GET', '/api/v2/users', getUsers),
  route('POST', '/api/v2/users', postUser),
  route('PUT', '/api/v2/users', putUser),
  route('POST', '/api/v2/users/password', postPassword),
  route('PATCH', '/api/v2/users/{userId}/disable', (rt, req) => patchAccess(rt, req, false)),
  route('PATCH', '/api/v2/users/{userId}/enable', (rt, req) => patchAccess(rt, req, true)),
  route('DELETE', '/api/v2/users/{userId}', deleteUser),
  route('POST', '/api/v2/login', (rt, req) => postLogin(rt, req, false)),
  route('POST', '/api/v2/login/autostart', (rt, req) => postLogin(rt, req, true)),
  route('POST', '/api/v2/groups/{groupId}/users', postGroupMember),
  route('DELETE', '/api/v2/groups/{groupId}/users/{userId}', deleteGroupMember),
];
