// The book's WebAssembly size table (docs/src/webassembly.md), measured from what `make wasm` built: `node wasm/sizes.mjs`
// checks it (exit 1 when a figure is off by more than 3%), `--write` rewrites it.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const MARKER = /<!-- size:([^ ]+) -->([^<]*)<!-- \/size -->/g;
const kib = (n) => Math.round(n / 1024);

/** Size and gzip -9 size of a built artifact, in KiB. */
export function measure(path) {
  const bytes = readFileSync(join(root, path));
  return [kib(bytes.length), kib(gzipSync(bytes, { level: 9 }).length)];
}

const shown = ([size, gz]) => `${size} KiB (${gz} KiB)`;

/** The table's marked figures that are off: "path: the book says …, built …" lines. */
export function stale(readme) {
  const wrong = [];
  for (const [, path, text] of readme.matchAll(MARKER)) {
    const built = measure(path);
    // Builds move by a few KiB from one toolchain to the next: within 3% is the same figure.
    const close = (a, b) => Math.abs(a - b) <= Math.max(3, b * 0.03);
    const [size, gz] = text.match(/\d+/g).map(Number);
    if (!close(size, built[0]) || !close(gz, built[1])) {
      wrong.push(`${path}: docs/src/webassembly.md says ${text}, built ${shown(built)}`);
    }
  }
  return wrong;
}

export const markerCount = (readme) => [...readme.matchAll(MARKER)].length;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = join(root, 'docs', 'src', 'webassembly.md');
  const readme = readFileSync(file, 'utf8');
  if (process.argv.includes('--write')) {
    writeFileSync(file, readme.replace(MARKER, (_, path) => `<!-- size:${path} -->${shown(measure(path))}<!-- /size -->`));
  } else {
    const wrong = stale(readme);
    for (const line of wrong) console.error(line);
    process.exit(wrong.length ? 1 : 0);
  }
}
