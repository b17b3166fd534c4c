import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Integration tests start processes, a simulator and databases: give them room.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two cores: more parallel files only adds contention to timing-sensitive rate tests.
    maxWorkers: 2,
    // Each fork runs file after file with the modules it has loaded: loading src/ and its
    // libraries anew for every file took a third of the suite's time on two cores. Every file
    // makes its own database, key prefix, app and servers, so none reads another's state. The
    // timing files (`npm run test:timing`) still run each in a fresh process.
    isolate: false,
    globalSetup: ['test/helpers/global-setup.ts'],
  },
});
