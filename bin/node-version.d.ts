// Types of bin/node-version.js, for test/node-version.test.ts.
export declare const NODE_MAJOR_NEEDED: number;
export declare function nodeVersionProblem(version: string): string | undefined;
