// Runs a WASI command module like a native command: stdin, stdout, stderr, argv, exit code. No preopened directories.
import { WASI } from 'node:wasi';
import { readFileSync } from 'node:fs';

const [module, ...args] = process.argv.slice(2);
// The module reads the clock through WASI; CAPI2ARGO_NOW, when set, pins it (as natively).
const env = process.env.CAPI2ARGO_NOW ? { CAPI2ARGO_NOW: process.env.CAPI2ARGO_NOW } : {};
const wasi = new WASI({ version: 'preview1', args: ['capi2argo', ...args], env, returnOnExit: true });
const instance = await WebAssembly.instantiate(await WebAssembly.compile(readFileSync(module)), wasi.getImportObject());
process.exitCode = wasi.start(instance);
