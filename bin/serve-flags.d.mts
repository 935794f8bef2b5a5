export declare const SERVE_HEAP_FLAGS: readonly string[];
export declare function missingHeapFlags(execArgv?: readonly string[], nodeOptions?: string): string[];
