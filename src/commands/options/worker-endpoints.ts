import { DEFAULT_ORG } from '../../settings/orgs-file.ts';
import { SCIM_PATH } from '../../scim/server.ts';
import { webhookPathOf } from '../../webhooks/receiver.ts';

/** What the worker serves, as it listens: each part's port (0 asks for any) and interface. */
export interface WorkerEndpoints {
  health: { port: number; host: string };
  /** Off (undefined) unless some organisation has a webhook secret. */
  webhooks?: { port: number; host: string; orgs: readonly string[] };
  /** Off unless some organisation has a SCIM token. */
  scim?: { port: number; host: string; orgs: readonly string[] };
  /** Off unless TRAINSYNC_CONSOLE_USERS is set. */
  console?: { port: number; host: string };
}

/** A URL a person can open: a server listening on every interface is reached on this machine at 127.0.0.1. */
function url(host: string, port: number, path: string): string {
  const everywhere = host === '0.0.0.0' || host === '::' || host === '';
  const shown = everywhere ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `http://${shown}:${port}${path}${everywhere ? '  (all interfaces)' : ''}`;
}

const scimPathOf = (slug: string): string => (slug === DEFAULT_ORG ? SCIM_PATH : `${SCIM_PATH}/${slug}`);

/**
 * One line per endpoint the worker serves, with its URL (what `trainsync worker` prints on
 * a terminal, or with --print-endpoints): health and metrics always; webhooks, SCIM and
 * the console when they are on.
 */
export function endpointLines(endpoints: WorkerEndpoints): string[] {
  const { health } = endpoints;
  const lines = [`health    ${url(health.host, health.port, '/healthz')}`, `metrics   ${url(health.host, health.port, '/metrics')}`];
  const { webhooks, scim, console } = endpoints;
  if (webhooks) lines.push(`webhooks  POST ${url(webhooks.host, webhooks.port, webhooks.orgs.map(webhookPathOf).join(`, `))}`);
  if (scim) lines.push(`SCIM      ${url(scim.host, scim.port, scim.orgs.map(scimPathOf).join(', '))}`);
  if (console) lines.push(`console   ${url(console.host, console.port, '/')}`);
  return lines;
}
