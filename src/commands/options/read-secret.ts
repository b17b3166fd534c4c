/**
 * Reads a secret from standard input, never from argv (which `ps` and shell history
 * show). A pipe or file is read to the end and one trailing newline (LF or CRLF) is
 * dropped; on a terminal the user is prompted and nothing is echoed.
 */
export async function readSecret(input: NodeJS.ReadStream = process.stdin, prompt: NodeJS.WriteStream = process.stderr, label = 'New password: '): Promise<string> {
  if (input.isTTY) return readWithoutEcho(input, prompt, label);
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

function readWithoutEcho(input: NodeJS.ReadStream, prompt: NodeJS.WriteStream, label: string): Promise<string> {
  return new Promise((resolve, reject) => {
    prompt.write(label);
    input.setRawMode(true);
    input.resume();
    input.setEncoding('utf8');
    let value = '';
    const done = (error?: Error): void => {
      input.setRawMode(false);
      input.pause();
      input.off('data', onData);
      prompt.write('\n');
      if (error) reject(error);
      else resolve(value);
    };
    const onData = (text: string): void => {
      for (const ch of text) {
        if (ch === '\r' || ch === '\n') return done();
        if (ch === '\u0003') return done(new Error('cancelled'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    input.on('data', onData);
  });
}
