import type { FastifyPluginAsync } from 'fastify';
import { loadAssets } from '../assets.ts';

/** `GET /assets/:name`: the console's styles and scripts (no session needed), cached an hour. */
export const assetRoutes: FastifyPluginAsync = async (server) => {
  const assets = loadAssets();
  server.get<{ Params: { name: string } }>('/assets/:name', async (request, reply) => {
    const asset = assets.get(request.params.name);
    if (!asset) return reply.code(404).send('not found');
    return reply.type(asset.type).header('cache-control', 'public, max-age=3600').send(asset.body);
  });
};
