// Types of bin/build-info.js, for test/build-current.test.ts.
export declare const ROOT: string;
export declare const DIST: string;
export declare const BUILD_INPUTS: readonly string[];
export declare function sourceHash(files: readonly string[], read?: (file: string) => Buffer | undefined): string;
export declare function readFromDisk(file: string): Buffer | undefined;
