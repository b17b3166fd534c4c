/**
 * The console speaks for itself: a message written for the command line (a refusal, a
 * hold) loses its options and commands here, and the page says what to do on the page.
 * Parentheses naming an option go ("the limit of 5 (--max-disable 5)" → "the limit of 5"),
 * then every sentence that still names an option or a `trainsync` command.
 */
export function consoleWording(message: string): string {
  const bare = message.replace(/\s*\([^()]*(?:--[a-z]|`)[^()]*\)/g, '');
  const sentences = bare.match(/[^.!?]+(?:[.!?]+(?=\s|$)|$)\s*/g) ?? [bare];
  return sentences
    .filter((s) => !/(^|[\s(`'"])--[a-z]/.test(s) && !/\btrainsync [a-z]/.test(s) && !/`/.test(s))
    .join('')
    .trim();
}
