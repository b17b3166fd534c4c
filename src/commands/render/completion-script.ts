/**
 * Shell completion scripts for `trainsync completion bash|zsh`, written from a model of the
 * commands (src/commands/completion.ts builds it from the commander program), so a command or
 * option added to the program is completed without touching this file.
 */

/** One command as completion sees it. */
export interface CompletionEntry {
  /** The words of its name after `trainsync` (`[]` for trainsync itself, `['feed', 'check']`). */
  path: readonly string[];
  /** Its subcommands, and the fixed values of its arguments when they have any. */
  words: readonly string[];
  /** Every option it takes, global ones included: `--json`, `-v`… */
  options: readonly string[];
  /** The options that take a value, with the values when they are a fixed list (else files). */
  values: ReadonlyArray<{ flag: string; choices?: readonly string[] }>;
}

/** A word the scripts may carry as it is: what commander names and flags are made of. */
export const PLAIN_WORD = /^[A-Za-z0-9][A-Za-z0-9_.:@%+=,/-]*$|^--?[A-Za-z0-9][A-Za-z0-9_-]*$/;

/** Single-quoted for sh (bash and zsh read it the same). */
function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

function plain(words: readonly string[]): string[] {
  return words.filter((word) => PLAIN_WORD.test(word));
}

function pathOf(entry: CompletionEntry): string {
  return entry.path.join(' ');
}

/** The loop both shells run: which command the words typed so far name (`feed check`). */
function commandPathCase(entries: readonly CompletionEntry[], wordsVar: string, from: string, to: string): string {
  const paths = entries.filter((e) => e.path.length > 0).map((e) => quote(pathOf(e)));
  return [
    `  for (( i = ${from}; i < ${to}; i++ )); do`,
    `    word=${wordsVar}`,
    '    case "${cmd:+$cmd }$word" in',
    `      ${paths.join('|')}) cmd="\${cmd:+$cmd }$word" ;;`,
    '    esac',
    '  done',
  ].join('\n');
}

/** The cases of `"$cmd:$prev"` for options that take a value: a fixed list, or files. */
function valueCases(entries: readonly CompletionEntry[], render: (choices: readonly string[] | undefined) => string): string[] {
  const lines: string[] = [];
  for (const entry of entries) {
    for (const value of entry.values) {
      if (!PLAIN_WORD.test(value.flag)) continue;
      lines.push(`    ${quote(`${pathOf(entry)}:${value.flag}`)}) ${render(value.choices === undefined ? undefined : plain(value.choices))} ;;`);
    }
  }
  return lines;
}

/** The completion script for bash (bash-completion, or `source <(trainsync completion bash)`). */
export function bashCompletionScript(entries: readonly CompletionEntry[]): string {
  const values = valueCases(entries, (choices) => (choices === undefined ? 'return 0' : `COMPREPLY=($(compgen -W ${quote(choices.join(' '))} -- "$cur")); return 0`));
  const words = entries.map((entry) => `    ${quote(pathOf(entry))}) list=${quote([...plain(entry.words), ...plain(entry.options)].join(' '))} ;;`);
  return `# bash completion for trainsync, written by \`trainsync completion bash\` from its commands.
# Load it in this shell: source <(trainsync completion bash)
# or for every shell: trainsync completion bash > ~/.local/share/bash-completion/completions/trainsync
_trainsync() {
  local cur prev cmd="" word list="" i
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
${commandPathCase(entries, '"${COMP_WORDS[i]}"', '1', 'COMP_CWORD')}
  COMPREPLY=()
  # After an option that takes a value: its values, or (none listed) the shell's own file names.
  case "$cmd:$prev" in
${values.join('\n')}
  esac
  case "$cmd" in
${words.join('\n')}
  esac
  COMPREPLY=($(compgen -W "$list" -- "$cur"))
}
complete -o default -F _trainsync trainsync
`;
}

/** The completion script for zsh (a file \`_trainsync\` on $fpath, or `source <(trainsync completion zsh)`). */
export function zshCompletionScript(entries: readonly CompletionEntry[]): string {
  const values = valueCases(entries, (choices) => (choices === undefined ? '_files; return' : `compadd -- ${choices.map(quote).join(' ')}; return`));
  const words = entries.map((entry) => `    ${quote(pathOf(entry))}) list=(${[...plain(entry.words), ...plain(entry.options)].map(quote).join(' ')}) ;;`);
  return `#compdef trainsync
# zsh completion for trainsync, written by \`trainsync completion zsh\` from its commands.
# Load it in this shell (after compinit): source <(trainsync completion zsh)
# or for every shell: trainsync completion zsh > "\${fpath[1]}/_trainsync"
_trainsync() {
  local cmd="" word i
  local -a list
${commandPathCase(entries, '"${words[i]}"', '2', 'CURRENT')}
  # After an option that takes a value: its values, or (none listed) file names.
  case "$cmd:\${words[CURRENT-1]}" in
${values.join('\n')}
  esac
  case "$cmd" in
${words.join('\n')}
  esac
  compadd -- "\${list[@]}"
}
if [ "\${funcstack[1]}" = "_trainsync" ]; then
  _trainsync "$@"
else
  compdef _trainsync trainsync
fi
`;
}
