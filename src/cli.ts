/**
 * The composition root: wires config, logging and the jobs of jobs/ into the
 * commands. The only file of src/ that imports jobs/.
 */
import { errorMessage } from './lib/errors.ts';
import { CommanderError } from 'commander';
import { allJobs } from '../jobs/index.ts';
import { buildProgram } from './commands/program.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { toInfrastructureError } from './lib/infra-errors.ts';
import { createLogger } from './runtime/log.ts';

/** The configuration, or undefined when it cannot be read (its error is reported already). */
function configOrNothing(): Config | undefined {
  try {
    return loadConfig(process.env);
  } catch {
    return undefined;
  }
}

/** The line a person reads: a Postgres or Redis failure names its setting (password masked). */
function describe(error: unknown): string {
  const config = configOrNothing();
  return (config && toInfrastructureError(error, config)?.message) ?? errorMessage(error);
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
    process.stderr.write(`trainsync: ${describe(error)}\n`);
    if (!(error instanceof ConfigError) && configOrNothing()?.LOG_LEVEL === 'debug' && error instanceof Error) process.stderr.write(`${error.stack}\n`);
    process.exitCode = 1;
  }
}

// `trainsync status | head`: a reader that stops early is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

await main();
// A one-shot command has closed its connections by now; if a stray handle keeps the
// loop alive, do not hang a cron job or a CI step over it.
setTimeout(() => process.exit(), 3_000).unref();
