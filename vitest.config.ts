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
    globalSetup: ['test/helpers/global-setup.ts'],
  },
});
