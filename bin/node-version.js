// Which Node trainsync runs on, checked by bin/trainsync.js before anything else loads.
// Written, like bin/trainsync.js, in syntax every Node that runs ES modules parses (12.17
// on: no `?.`, `??`, top-level await or class fields; test/node-version.test.ts holds it to
// that), so an older Node says this one line instead of a SyntaxError from dist/.

/** The oldest major version trainsync runs on (package.json "engines"). */
export const NODE_MAJOR_NEEDED = 22;

/**
 * The line to print and stop with when Node `version` ("20.20.2", "v18.0.0") is older
 * than trainsync needs, or undefined when it will do. Pure: the version string alone.
 */
export function nodeVersionProblem(version) {
  const text = String(version).trim().replace(/^v/, '');
  const match = /^(\d+)(\.\d+)*/.exec(text);
  if (match !== null && Number(match[1]) >= NODE_MAJOR_NEEDED) return undefined;
  const found = match !== null ? 'Node ' + match[0] : 'a Node whose version reads ' + JSON.stringify(text.slice(0, 40));
  return (
    'trainsync needs Node ' + NODE_MAJOR_NEEDED + ' or later, and this is ' + found + ': install Node ' + NODE_MAJOR_NEEDED +
    ' (`nvm install ' + NODE_MAJOR_NEEDED + '`, or https://nodejs.org/en/download; docs/getting-started.md#node-22 has a way without root) and run it again'
  );
}
