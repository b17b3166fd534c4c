#!/usr/bin/env node
// Runs the CLI compiled ahead when that build is current, else builds it, else runs the
// TypeScript sources through tsx's loader: never a stale build. See README, "Why a loader".
import { runTypeScript } from './compile-ahead.js';

await runTypeScript(new URL('../src/cli.ts', import.meta.url).pathname);
