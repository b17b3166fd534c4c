import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * The result of a change, carried across its redirect (Post/Redirect/Get): a signed cookie
 * the next page shows once and clears, so a reload of that page posts nothing again.
 */
export const FLASH_COOKIE = 'trainsync_flash';
const LONGEST = 500;

/** Keeps `message` for the next page, then answers 303 to `location` (a path of this console). */
export function redirectWithFlash(request: FastifyRequest, reply: FastifyReply, location: string, message: string): FastifyReply {
  reply.setCookie(FLASH_COOKIE, message.slice(0, LONGEST), { path: '/', httpOnly: true, sameSite: 'strict', secure: request.protocol === 'https', signed: true, maxAge: 120 });
  return reply.redirect(location, 303);
}

/** The message a change left for this page, if any (signed by this server): taken once. */
export function takeFlash(request: FastifyRequest, reply: FastifyReply): string | undefined {
  const raw = request.cookies[FLASH_COOKIE];
  if (raw === undefined) return undefined;
  reply.clearCookie(FLASH_COOKIE, { path: '/' });
  const read = request.unsignCookie(raw);
  return read.valid && read.value ? read.value.slice(0, LONGEST) : undefined;
}
