// The golden cases (tests/golden/<case>/), read the same way the Rust harness reads them.
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const read = (path, fallback = '') => (existsSync(path) ? readFileSync(path, 'utf8') : fallback);

/** The time every case runs at (tests/golden/now), unless its own `now` file says another. */
const pinned = () => read(join(root, 'tests', 'golden', 'now')).trim();

/** The randomness every case runs with (tests/golden/random): sealed output is pinned by it. */
export const pinnedRandom = () => read(join(root, 'tests', 'golden', 'random')).trim();

export function cases() {
  const dir = join(root, 'tests', 'golden');
  return readdirSync(dir)
    .filter((name) => existsSync(join(dir, name, 'input.yaml')))
    .sort()
    .map((name) => {
      const c = join(dir, name);
      return {
        name,
        input: readFileSync(join(c, 'input.yaml')),
        args: read(join(c, 'args')).split('\n').filter(Boolean),
        stdout: read(join(c, 'expected', 'output.yaml')),
        stderr: read(join(c, 'expected', 'stderr.txt')),
        code: Number(read(join(c, 'expected', 'exit-code'), '0').trim()),
        // RFC 3339; `ownClock` when the case pins a time of its own (a host with no clock of
        // its own cannot run it).
        now: read(join(c, 'now'), pinned()).trim(),
        ownClock: existsSync(join(c, 'now')),
        // It seals: its ciphertexts are those of the pinned randomness, which only a host that
        // reads CAPI2ARGO_RANDOM (the WASI command) can be given.
        sealed: read(join(c, 'expected', 'output.yaml')).includes('kind: SealedSecret'),
      };
    });
}

/**
 * `--set k=v` pairs of a case, as a settings object. A value written as JSON (a list or an
 * object: `accessProviders=[…]`) is what a JavaScript caller passes as an array or an object;
 * every other value stays the string the command line gets.
 */
export function settings(args) {
  const out = {};
  for (let i = 0; i < args.length; i += 2) {
    if (args[i] !== '--set') throw new Error(`unsupported arg ${args[i]}`);
    const [k, ...v] = args[i + 1].split('=');
    const value = v.join('=');
    out[k] = /^[[{]/.test(value) ? JSON.parse(value) : value;
  }
  return out;
}

/**
 * Cases a JavaScript host can run: JS strings cannot hold invalid UTF-8, the resource limits are
 * flags of the command-line tool, and a JavaScript host seals with Web Crypto's randomness, not
 * the pinned one (tests/wasm/seal.test.mjs opens what it seals instead).
 */
export function jsApplicable(c) {
  return !c.name.includes('not-utf8') && !c.sealed && c.args.every((a, i) => i % 2 === 1 || a === '--set');
}
