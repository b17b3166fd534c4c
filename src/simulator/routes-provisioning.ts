import { randomBytes } from 'node:crypto';
import type { ApiUser } from './state.ts';
import { findGroup, findUser, seatsInUse, setGroupMember, setUserAccess, userAccount } from './state.ts';
import type { FieldProblem, Reply, RouteRequest } from './reply.ts';
import { apiError, invalidModel, isGuid, noContent, text } from './reply.ts';
import type { Runtime } from './runtime.ts';

/** Write endpoints of the provisioning side. Every write answers 204 with no body. */

/** Any e-mail at this domain belongs to a user of another organisation: POST users answers EMAIL_IN_USE. */
export const FOREIGN_EMAIL_DOMAIN = '@other-org.example';

const EMAIL_RE = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

function isForeignEmail(email: string): boolean {
  return email.toLowerCase().endsWith(FOREIGN_EMAIL_DOMAIN);
}

/** Whether a user of another organisation on this platform (not `except`, the same person) has the e-mail: e-mails are unique platform-wide. */
function usedInOtherOrganisation(rt: Runtime, lowerEmail: string, except?: string): boolean {
  return rt.platform.some((other) => other !== rt.state && other.users.some((u) => u.id !== except && u.email.toLowerCase() === lowerEmail));
}

/** The unpublished strength rules, as this simulator enforces them; the failing ones go in `details`. */
export function passwordProblems(password: string): Array<{ rule: string; message: string }> {
  const problems: Array<{ rule: string; message: string }> = [];
  if (password.length < 8) problems.push({ rule: 'MIN_LENGTH', message: 'The password must be at least 8 characters long.' });
  if (!/\d/.test(password)) problems.push({ rule: 'REQUIRES_DIGIT', message: 'The password must contain at least one digit.' });
  return problems;
}

interface UserModel {
  email: string;
  firstName: string;
  lastName: string;
  role: 'USER' | 'ADMIN';
  organisationIdentifier: string | null;
  password: string | undefined;
}

function requiredString(body: Record<string, unknown>, field: string, problems: FieldProblem[], max = 200): string {
  const value = body[field];
  if (typeof value !== 'string' || value.trim() === '') {
    problems.push({ field, message: `The ${field} field is required.` });
    return '';
  }
  if (value.length > max) problems.push({ field, message: `The ${field} field must be at most ${max} characters.` });
  return value.trim();
}

function asObject(body: unknown): Record<string, unknown> | undefined {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
}

/** Validates a create/update body; `allowPassword` for POST users only. */
function readUserModel(body: unknown, allowPassword: boolean): UserModel | Reply {
  const obj = asObject(body);
  if (!obj) return invalidModel([{ field: 'body', message: 'A JSON object body is required.' }]);
  const problems: FieldProblem[] = [];
  const email = requiredString(obj, 'email', problems, 254);
  if (email !== '' && !EMAIL_RE.test(email)) problems.push({ field: 'email', message: 'The email field is not a valid e-mail address.' });
  const firstName = requiredString(obj, 'firstName', problems, 100);
  const lastName = requiredString(obj, 'lastName', problems, 100);
  const role = obj.role;
  if (role !== 'USER' && role !== 'ADMIN') problems.push({ field: 'role', message: 'The role field is required and must be USER or ADMIN.' });
  const orgId = obj.organisationIdentifier;
  if (orgId !== undefined && orgId !== null && typeof orgId !== 'string') problems.push({ field: 'organisationIdentifier', message: 'Must be a string.' });
  let password: string | undefined;
  if (allowPassword && obj.password !== undefined && obj.password !== null) {
    if (typeof obj.password !== 'string') problems.push({ field: 'password', message: 'Must be a string.' });
    else {
      for (const p of passwordProblems(obj.password)) problems.push({ field: 'password', message: p.message });
      password = obj.password;
    }
  }
  if (problems.length > 0) return invalidModel(problems);
  return {
    email,
    firstName,
    lastName,
    role: role as 'USER' | 'ADMIN',
    organisationIdentifier: typeof orgId === 'string' && orgId !== '' ? orgId : null,
    password,
  };
}

function isReply(value: unknown): value is Reply {
  return typeof value === 'object' && value !== null && 'status' in value;
}

export function postUser(rt: Runtime, req: RouteRequest): Reply {
  const model = readUserModel(req.body, true);
  if (isReply(model)) return model;
  const { state } = rt;
  if (isForeignEmail(model.email)) return apiError('EMAIL_IN_USE', 'A user outside this organisation already uses this e-mail address.');
  const lower = model.email.toLowerCase();
  if (state.users.some((u) => u.email.toLowerCase() === lower)) {
    return apiError('EMAIL_IN_USE_ORG_CONNECTED', 'A member of this organisation already uses this e-mail address.');
  }
  if (usedInOtherOrganisation(rt, lower)) return apiError('EMAIL_IN_USE', 'A user outside this organisation already uses this e-mail address.');
  if (seatsInUse(state) >= state.seats.totalSeats) return apiError('USER_LIMIT_REACHED', 'The organisation has no seats left.');
  const user: ApiUser = {
    id: state.prng.guid(),
    username: model.email,
    email: model.email,
    firstName: model.firstName,
    lastName: model.lastName,
    birthYear: -1,
    gender: 'UNKNOWN',
    role: model.role,
    organisationIdentifier: model.organisationIdentifier,
    hasAccess: true,
    usingSeat: state.seats.unlimitedPlan,
    accountType: 'API',
    deletionStatus: 'CAN_DELETE',
    userFilters: [],
  };
  state.users.push(user);
  state.usersById.set(user.id, user);
  if (model.password !== undefined) {
    const account = userAccount(state, user.id);
    account.passwordSet = true;
    account.passwordChanges++;
  }
  state.version++;
  return noContent();
}

function identifierOrError(req: RouteRequest): string | Reply {
  const id = req.query.get('userIdentifier')?.trim();
  if (!id) return invalidModel([{ field: 'userIdentifier', message: 'The userIdentifier parameter is required.' }]);
  return id;
}

const userNotFound = (): Reply => apiError('USER_NOT_FOUND', 'The user was not found.');
const invalidUserType = (): Reply => apiError('INVALID_USER_TYPE', 'Only users created through the API can be changed.');

export function putUser(rt: Runtime, req: RouteRequest): Reply {
  const identifier = identifierOrError(req);
  if (typeof identifier !== 'string') return identifier;
  const model = readUserModel(req.body, false);
  if (isReply(model)) return model;
  const { state } = rt;
  const user = findUser(state, identifier);
  if (!user) return userNotFound();
  if (user.accountType !== 'API') return invalidUserType();
  const lower = model.email.toLowerCase();
  if (isForeignEmail(lower) || state.users.some((u) => u !== user && u.email.toLowerCase() === lower) || usedInOtherOrganisation(rt, lower, user.id)) {
    return apiError('EMAIL_IN_USE', 'Another user already uses this e-mail address.');
  }
  user.email = model.email;
  user.username = model.email;
  user.firstName = model.firstName;
  user.lastName = model.lastName;
  user.role = model.role;
  // A full replacement: an identifier left out is cleared.
  user.organisationIdentifier = model.organisationIdentifier;
  state.version++;
  return noContent();
}

export function postPassword(rt: Runtime, req: RouteRequest): Reply {
  const identifier = identifierOrError(req);
  if (typeof identifier !== 'string') return identifier;
  const body = asObject(req.body);
  if (!body || typeof body.password !== 'string') return invalidModel([{ field: 'password', message: 'The password field is required.' }]);
  const user = findUser(rt.state, identifier);
  if (!user) return userNotFound();
  if (user.accountType !== 'API') return invalidUserType();
  const problems = passwordProblems(body.password);
  if (problems.length > 0) return apiError('INVALID_PASSWORD', 'The password does not meet the strength rules.', problems);
  const account = userAccount(rt.state, user.id);
  account.passwordSet = true;
  account.passwordChanges++;
  return noContent();
}

function loginUrl(rt: Runtime, req: RouteRequest, user: ApiUser, courseId?: string): string {
  const host = new URL(req.origin).host;
  const params = new URLSearchParams({ token: randomBytes(24).toString('base64url'), userId: user.id, orgId: rt.state.organisationId });
  if (courseId !== undefined) params.set('moduleId', courseId);
  return `https://${host}/account/login?${params.toString()}`;
}

/** POST login and POST login/autostart: 200 with the URL as plain text. */
export function postLogin(rt: Runtime, req: RouteRequest, autostart: boolean): Reply {
  const identifier = identifierOrError(req);
  if (typeof identifier !== 'string') return identifier;
  const courseId = req.query.get('courseId')?.trim() ?? '';
  if (autostart && !isGuid(courseId)) return invalidModel([{ field: 'courseId', message: 'The courseId parameter must be a full valid GUID.' }]);
  const user = findUser(rt.state, identifier);
  if (!user) return userNotFound();
  // A disabled user is locked out of this organisation's training too.
  if (userAccount(rt.state, user.id).locked || !user.hasAccess) return apiError('USER_LOCKOUT', "The user is locked out of this organisation's training.");
  if (autostart) {
    const course = rt.state.courses.find((c) => c.id === courseId.toLowerCase());
    // The vendor's code is misspelt exactly so.
    if (!course) return apiError('COUSRE_NOT_FOUND', 'The course was not found.');
    return text(loginUrl(rt, req, user, course.id));
  }
  return text(loginUrl(rt, req, user));
}

export function patchAccess(rt: Runtime, req: RouteRequest, hasAccess: boolean): Reply {
  const id = req.params[0] ?? '';
  const user = isGuid(id) ? rt.state.usersById.get(id.toLowerCase()) : undefined;
  if (!user) return userNotFound();
  setUserAccess(rt.state, user, hasAccess);
  return noContent();
}

export function deleteUser(rt: Runtime, req: RouteRequest): Reply {
  const id = req.params[0] ?? '';
  const { state } = rt;
  const user = isGuid(id) ? state.usersById.get(id.toLowerCase()) : undefined;
  if (!user) return userNotFound();
  // Deleting removes the account from the whole platform, so one in another organisation too stays.
  if (rt.platform.some((other) => other !== state && other.usersById.has(user.id))) return apiError('USER_IN_OTHER_ORG', 'The account also belongs to another organisation.');
  if (user.usingSeat) return apiError('USER_SEAT_ASSIGNED', 'The user holds an unlimited-plan seat.');
  state.users.splice(state.users.indexOf(user), 1);
  state.usersById.delete(user.id);
  state.accounts.delete(user.id);
  for (const g of state.groups) g.memberIds.delete(user.id);
  state.version++;
  return noContent();
}

export function postGroupMember(rt: Runtime, req: RouteRequest): Reply {
  const { state } = rt;
  if (state.groups.length === 0) return apiError('NO_GROUPS_AVAILABLE', 'The organisation has no groups.');
  const body = asObject(req.body);
  const userId = body?.userId;
  if (typeof userId !== 'string' || !isGuid(userId)) return invalidModel([{ field: 'userId', message: 'The userId field is required and must be a GUID.' }]);
  const group = findGroup(state, req.params[0] ?? '');
  if (!group) return apiError('GROUP_NOT_FOUND', 'The group was not found.');
  const user = state.usersById.get(userId.toLowerCase());
  if (!user) return userNotFound();
  setGroupMember(state, group.id, user.id, true);
  return noContent();
}

export function deleteGroupMember(rt: Runtime, req: RouteRequest): Reply {
  const { state } = rt;
  const group = findGroup(state, req.params[0] ?? '');
  if (!group) return apiError('GROUP_NOT_FOUND', 'The group was not found.');
  const uid = req.params[1] ?? '';
  const user = isGuid(uid) ? state.usersById.get(uid.toLowerCase()) : undefined;
  if (!user) return userNotFound();
  setGroupMember(state, group.id, user.id, false);
  return noContent();
}
