/**
 * What a terminal shows after `output` was written to it: enough of a VT100 for our
 * progress lines (cursor up, column, erase to end of line, CR/LF); colours and mode
 * switches are dropped. Lines of the final screen, trailing spaces trimmed.
 */
export function renderScreen(output: string): string[] {
  const lines: string[][] = [[]];
  let row = 0;
  let col = 0;
  const at = (r: number): string[] => {
    while (lines.length <= r) lines.push([]);
    return lines[r]!;
  };
  // eslint-disable-next-line no-control-regex
  const token = /\x1b\[([?\d;]*)([A-Za-z])|\r|\n|[^\x1b\r\n]/gu;
  for (const match of output.matchAll(token)) {
    const [text, params, command] = match;
    if (text === '\r') col = 0;
    else if (text === '\n') {
      row += 1;
      col = 0;
      at(row);
    } else if (command !== undefined) {
      const n = Number((params ?? '').replace('?', '')) || 1;
      if (command === 'A') row = Math.max(0, row - n);
      else if (command === 'B') row += n;
      else if (command === 'G') col = n - 1;
      else if (command === 'K' && !params?.startsWith('?')) at(row).length = Math.min(at(row).length, col);
      // m (colours), h/l (cursor, wrapping): nothing to draw.
    } else {
      const line = at(row);
      while (line.length < col) line.push(' ');
      line[col] = text;
      col += 1;
    }
  }
  const screen = lines.map((chars) => chars.join('').trimEnd());
  while (screen.length > 0 && screen[screen.length - 1] === '') screen.pop();
  return screen;
}
