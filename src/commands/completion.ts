import { Argument, type Command } from 'commander';
import { bashCompletionScript, zshCompletionScript, type CompletionEntry } from './render/completion-script.ts';

export const COMPLETION_SHELLS = ['bash', 'zsh'] as const;

/** Every command of `program` (itself first, then depth first) as completion sees it. */
export function completionEntries(program: Command): CompletionEntry[] {
  const help = program.createHelp();
  const global = help.visibleOptions(program);
  const entries: CompletionEntry[] = [];
  const visit = (command: Command, path: readonly string[]): void => {
    const own = help.visibleOptions(command);
    // Options of trainsync itself (-v, --org) are taken after any command too.
    const options = command === program ? own : [...own, ...global.filter((g) => !own.some((o) => o.flags === g.flags))];
    const subcommands = help.visibleCommands(command);
    entries.push({
      path,
      words: [...subcommands.flatMap((sub) => [sub.name(), ...sub.aliases()]), ...command.registeredArguments.flatMap((arg) => arg.argChoices ?? [])],
      options: options.flatMap((option) => [option.short, option.long].filter((flag): flag is string => flag !== undefined)),
      values: options
        .filter((option) => option.required || option.optional)
        .flatMap((option) => [option.short, option.long].filter((flag): flag is string => flag !== undefined).map((flag) => ({ flag, ...(option.argChoices ? { choices: option.argChoices } : {}) }))),
    });
    // The implicit `help` command has no subcommands of its own to visit.
    for (const sub of subcommands) if (sub.name() !== 'help' || command.commands.includes(sub)) visit(sub, [...path, sub.name()]);
  };
  visit(program, []);
  return entries;
}

/**
 * `trainsync completion bash|zsh`: a completion script for the shell, made from the program
 * itself when it runs, so it lists every command and option there is. Reads no
 * configuration and touches nothing. Registered last, so the walk sees every command.
 */
export function registerCompletionCommand(program: Command): void {
  program
    .command('completion')
    .description('Print a shell completion script for trainsync (bash or zsh): its commands and their options.')
    .addArgument(new Argument('<shell>', 'the shell to complete in').choices(COMPLETION_SHELLS))
    .addHelpText(
      'after',
      `
Reads no configuration and touches nothing; the script is made from trainsync's own commands,
so it is as current as the trainsync that prints it.

Examples:
  source <(trainsync completion bash)                  # this shell
  trainsync completion bash > ~/.local/share/bash-completion/completions/trainsync
  trainsync completion zsh > "\${fpath[1]}/_trainsync"  # zsh, with compinit`,
    )
    .action((shell: (typeof COMPLETION_SHELLS)[number]) => {
      const entries = completionEntries(program);
      process.stdout.write(shell === 'bash' ? bashCompletionScript(entries) : zshCompletionScript(entries));
    });
}
