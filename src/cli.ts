/**
 * The composition root: wires config, logging and the jobs of jobs/ into the
 * commands. The only file of src/ that imports jobs/.
 */
import { errorMessage } from './lib/errors.ts';
import { CommanderError, type Command } from 'commander';
import { allJobs } from '../jobs/index.ts';
import { exitCodeFor, exitReason } from './commands/exit-codes.ts';
import { buildProgram } from './commands/program.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { toInfrastructureError } from './lib/infra-errors.ts';
import { createLogger, logFormatFor, type Logger } from './runtime/log.ts';
import { fitWidth, stderrTerminal } from './commands/terminal.ts';

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

/**
 * On a terminal a person reads: short lines at warn and above (-v adds info), written
 * through the progress display so they never cross its lines. LOG_LEVEL, when set,
 * rules. Anywhere else (a pipe, a file, a service manager): JSON lines as configured.
 */
function commandLogger(config: Config, verbose: boolean): Logger {
  const format = logFormatFor(config, stderrTerminal.isTty);
  if (!stderrTerminal.isTty || format === 'json') return createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  const level = config.LOG_LEVEL_GIVEN ? config.LOG_LEVEL : verbose ? 'info' : 'warn';
  return createLogger({ level, format, destination: stderrTerminal.logDestination, terminal: true });
}

async function main(): Promise<void> {
  const program: Command = buildProgram({ loadConfig: () => loadConfig(process.env), createLogger: (config) => commandLogger(config, program.opts<{ verbose?: boolean }>().verbose === true), jobs: allJobs });
  try {
    await program.parseAsync(process.argv);
    // The reason for a non-zero exit, last, in one line: never scrolled away by the output.
    const reason = exitReason();
    // On a terminal it is cut to the width (the whole message is above); elsewhere it is whole.
    const line = `trainsync: ${reason}`;
    if (reason !== undefined && process.exitCode !== undefined && process.exitCode !== 0) process.stderr.write(`${stderrTerminal.isTty ? fitWidth(line, stderrTerminal.columns - 1) : line}\n`);
  } catch (error) {
    // Commander has printed its own message (unknown option, bad value); the code is the table's.
    process.exitCode = exitCodeFor(error);
    if (error instanceof CommanderError) return;
    // Errors a person can act on: the message says what to fix; no stack trace.
    process.stderr.write(`trainsync: ${describe(error)}\n`);
    if (!(error instanceof ConfigError) && configOrNothing()?.LOG_LEVEL === 'debug' && error instanceof Error) process.stderr.write(`${error.stack}\n`);
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
