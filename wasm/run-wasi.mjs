// Runs a WASI command module like a native command: stdin, stdout, stderr, argv, exit code. No preopened directories.
import { WASI } from 'node:wasi';
import { readFileSync } from 'node:fs';

const [module, ...args] = process.argv.slice(2);
// The module reads the clock and the randomness through WASI; CAPI2ARGO_NOW and
// CAPI2ARGO_RANDOM, when set, pin them (as natively: tests only).
const env = Object.fromEntries(['CAPI2ARGO_NOW', 'CAPI2ARGO_RANDOM'].filter((k) => process.env[k]).map((k) => [k, process.env[k]]));
const wasi = new WASI({ version: 'preview1', args: ['capi2argo', ...args], env, returnOnExit: true });
const instance = await WebAssembly.instantiate(await WebAssembly.compile(readFileSync(module)), wasi.getImportObject());
process.exitCode = wasi.start(instance);
