/**
 * The composition root: wires config, logging and the jobs of jobs/ into the
 * commands. The only file of src/ that imports jobs/.
 */
import { errorMessage } from './lib/errors.ts';
import { CommanderError, type Command } from 'commander';
import { allJobs } from '../jobs/index.ts';
import { EXIT, exitCodeFor, exitReason, UsageError } from './commands/options/exit-codes.ts';
import { buildProgram } from './commands/program.ts';
import { ConfigError, loadConfig, terminalColumnsSetting, type Config } from './config.ts';
import { toInfrastructureError } from './lib/infra-errors.ts';
import { pino } from 'pino';
import { createLogger, logFormatFor, type Logger } from './runtime/log.ts';
import { isFinalFailureRecord } from './queue/run-job.ts';
import { describeUnknownVariables } from './lib/unknown-variables.ts';
import { stderrLine, stderrTerminal, stderrText } from './commands/render/terminal.ts';
import { useColumnsVariable } from './lib/text-width.ts';
import { guardStream } from './lib/terminal-safe.ts';
import { applyEnvFile, EnvFileError, type EnvFileEntries } from './lib/env-file.ts';
import path from 'node:path';

/**
 * A `.env` file in the working directory, read before anything reads the environment: its
 * variables join the environment, which wins where both set one. A line it cannot read
 * stops every command at once (one line naming the file and the line, exit 2).
 */
function readEnvFile(): { file: string; entries: EnvFileEntries } | undefined {
  const file = path.resolve('.env');
  try {
    const entries = applyEnvFile(file, process.env);
    return entries === undefined ? undefined : { file, entries };
  } catch (error) {
    if (!(error instanceof EnvFileError)) throw error;
    stderrLine(error.message);
    process.exit(EXIT.refused);
  }
}
const envFile = readEnvFile();

// The terminal's width setting, read by src/config.ts with the rest of the environment.
useColumnsVariable(terminalColumnsSetting());

/** The TRAINSYNC_CRON_* settings the jobs declare: any other TRAINSYNC_CRON_* is a typo. */
const cronSettings = allJobs.flatMap((job) => (job.schedule ? [job.schedule.setting] : []));

const readConfig = (): Config => loadConfig(process.env, { cronSettings });

/** The configuration, or undefined when it cannot be read (its error is reported already). */
function configOrNothing(): Config | undefined {
  try {
    return readConfig();
  } catch {
    return undefined;
  }
}

/** The command being run (`worker`, `sync`…), known once commander has parsed the line. */
let commandName: string | undefined;

/**
 * Before a command runs: one warning naming the TRAINSYNC_* variables set that trainsync
 * does not read (a typo keeps a setting at its default, silently otherwise). Not for
 * `doctor`, which lists them among its checks, nor `feed check`, which reads no
 * configuration; a configuration that does not load is the command's to report.
 */
function warnUnknownVariables(command: Command, verbose: boolean): void {
  if (command.name() === 'completion') return;
  const config = configOrNothing();
  // A line of the .env file that sets a TRAINSYNC_* variable trainsync does not read is a
  // mistake in a file written for trainsync: refused, naming the file and the line.
  const inFile = envFile && (config?.unknownVariables ?? []).find((u) => envFile.entries.lines.has(u.name));
  if (envFile && inFile) {
    const hint = inFile.suggestion === undefined ? 'fix or remove the line' : `did you mean ${inFile.suggestion}?`;
    throw new UsageError(`${envFile.file} line ${envFile.entries.lines.get(inFile.name)}: ${inFile.name} is not a trainsync variable: ${hint}`);
  }
  if (command.name() === 'doctor' || command.parent?.name() === 'feed') return;
  const unknown = config?.unknownVariables ?? [];
  if (config === undefined || unknown.length === 0) return;
  commandLogger(config, verbose).warn(describeUnknownVariables(unknown));
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
  if (!stderrTerminal.isTty || format === 'json') {
    // A one-shot command writes its records synchronously, so they stay in order with its
    // last line (pino's default asynchronous writes let a record logged before it land after
    // it on a busy machine); the worker, which has no last line, keeps the faster default.
    const destination = commandName === 'worker' ? undefined : pino.destination({ dest: 2, sync: true });
    return createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT, destination });
  }
  const level = config.LOG_LEVEL_GIVEN ? config.LOG_LEVEL : verbose ? 'info' : 'warn';
  // A command that waits for its jobs says how each failed (its summary, its last line); only
  // the worker, which reports to nobody, shows a job's final failure as a record.
  const hide = commandName === 'worker' ? undefined : isFinalFailureRecord;
  return createLogger({ level, format, destination: stderrTerminal.logDestination, terminal: true, hide });
}

async function main(): Promise<void> {
  const verbose = (): boolean => program.opts<{ verbose?: boolean }>().verbose === true;
  const program: Command = buildProgram({ loadConfig: readConfig, createLogger: (config) => commandLogger(config, verbose()), jobs: allJobs, env: process.env });
  // Commander's own messages (unknown option, bad value): off a terminal stderr is JSON lines
  // only, so they become records like every other line there; on one, they stay as written.
  const writeErr = (text: string): void => {
    if (stderrTerminal.isTty) process.stderr.write(text);
    else stderrText(text.trimEnd(), process.stderr, EXIT.refused);
  };
  const everyCommand = (command: Command): Command[] => [command, ...command.commands.flatMap(everyCommand)];
  for (const command of everyCommand(program)) command.configureOutput({ writeErr });
  program.hook('preAction', (_program, command) => {
    commandName = command.name();
    warnUnknownVariables(command, verbose());
  });
  try {
    await program.parseAsync(process.argv);
    // The reason for a non-zero exit, last, in one line: never scrolled away by the output.
    const reason = exitReason();
    // On a terminal it wraps at word boundaries (a terminal would cut words); elsewhere it is one line.
    if (reason !== undefined && process.exitCode !== undefined && process.exitCode !== 0) stderrLine(reason);
  } catch (error) {
    // Commander has printed its own message (unknown option, bad value); the code is the table's.
    process.exitCode = exitCodeFor(error);
    if (error instanceof CommanderError) return;
    // Errors a person can act on: the message says what to fix; no stack trace.
    stderrLine(describe(error));
    if (!(error instanceof ConfigError) && configOrNothing()?.LOG_LEVEL === 'debug' && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  }
}

// On a terminal, nothing written to stdout can drive it: trainsync writes no escape
// sequence there on purpose, so any control character is data and is shown escaped.
if (process.stdout.isTTY) guardStream(process.stdout);

// `trainsync status | head`: a reader that stops early is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

await main();
// A one-shot command has closed its connections by now; if a stray handle keeps the
// loop alive, do not hang a cron job or a CI step over it.
setTimeout(() => process.exit(), 3_000).unref();
