#!/usr/bin/env node
// Runs the TypeScript CLI; needs Node 24 (installed into node_modules by npm install).
import('../src/cli/main.ts');
