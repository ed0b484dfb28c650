#!/usr/bin/env node
// Command-line runner over the engine (CPU backend in Node). Reference: docs/runner.md (cli/commands.ts).
import { register } from 'tsx/esm/api';

register();
const { main, endQuietlyOnClosedOutput } = await import('../cli/main.ts');
endQuietlyOnClosedOutput();
process.exitCode = await main(process.argv.slice(2));
