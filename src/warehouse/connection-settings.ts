/**
 * What every connection of trainsync's shares, in a file of its own so that reading them
 * does not import the pool (src/warehouse/pool.ts), which only the app's composition and
 * `migrate` import (.dependency-cruiser.mjs).
 */

/** How long opening a Postgres connection may take. */
export const CONNECT_TIMEOUT_MS = 10_000;

/** The role trainsync's connections take after the migrations (sql/views/95_trainsync_app.sql). */
export const APP_ROLE = 'trainsync_app';
