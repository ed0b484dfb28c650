#!/usr/bin/env node
// Command-line runner over the engine (CPU backend in Node). Reference: docs/runner.md (cli/commands.ts).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
