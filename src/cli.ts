/**
 * The composition root: wires config, logging and the jobs of jobs/ into the
 * commands. The only file of src/ that imports jobs/.
 */
import { errorMessage } from './errors.ts';
import { CommanderError } from 'commander';
import { allJobs } from '../jobs/index.ts';
import { buildProgram } from './commands/program.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createLogger } from './log.ts';

/** LOG_LEVEL=debug shows stack traces; a configuration that cannot be read shows none. */
function debugging(): boolean {
  try {
    return loadConfig(process.env).LOG_LEVEL === 'debug';
  } catch {
    return false;
  }
}

async function main(): Promise<void> {
  const program = buildProgram({ loadConfig: () => loadConfig(process.env), createLogger: (config) => createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT }), jobs: allJobs });
  program.exitOverride();
  try {
    await program.parseAsync(process.argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode;
      return;
    }
    // Errors a person can act on: the message says what to fix; no stack trace.
    const message = errorMessage(error);
    process.stderr.write(`trainsync: ${message}\n`);
    if (!(error instanceof ConfigError) && debugging() && error instanceof Error) process.stderr.write(`${error.stack}\n`);
    process.exitCode = 1;
  }
}

await main();
// A one-shot command has closed its connections by now; if a stray handle keeps the
// loop alive, do not hang a cron job or a CI step over it.
setTimeout(() => process.exit(), 3_000).unref();
