#!/usr/bin/env node
// Runs the TypeScript sources through tsx's loader: no build step that can go stale,
// and `npx trainsync` works straight after `npm ci`. See README, "Why a loader".
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
