// Opens what sealing wrote, as the Sealed Secrets controller opens it, with the test controller's
// private key and Node's own crypto (OpenSSL): written from the format (a 2-byte length,
// RSA-OAEP-SHA-256 of an AES-256 key under the scope's label, AES-GCM with a zero nonce), not
// from kubeseal's code. Shared by the WebAssembly hosts' tests and the playground's.
import assert from 'node:assert/strict';
import { constants, createDecipheriv, privateDecrypt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './cases.mjs';

export const fixture = (path) => readFileSync(join(root, 'tests', 'fixtures', path), 'utf8');
export const certificate = fixture('sealing/controller.crt');
const privateKey = fixture('sealing/controller.key');

/** One sealed value opened under `label`. */
export function open(value, label) {
  const bytes = Buffer.from(value, 'base64');
  const length = bytes.readUInt16BE(0);
  const session = privateDecrypt(
    { key: privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256', oaepLabel: Buffer.from(label) },
    bytes.subarray(2, 2 + length),
  );
  const sealed = bytes.subarray(2 + length);
  const decipher = createDecipheriv('aes-256-gcm', session, Buffer.alloc(12));
  decipher.setAuthTag(sealed.subarray(sealed.length - 16));
  return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - 16)), decipher.final()]).toString();
}

/**
 * The one SealedSecret's name and encrypted values, read from the YAML the function writes
 * (block style, two-space indents: no YAML library needed for it).
 */
export function sealedSecret(output) {
  const at = output.indexOf('kind: SealedSecret');
  assert.ok(at >= 0, `a SealedSecret in:\n${output}`);
  assert.equal(output.indexOf('kind: SealedSecret', at + 1), -1, 'one SealedSecret');
  const text = output.slice(at);
  const name = /\n\s*name: (\S+)/.exec(text)[1];
  const block = /encryptedData:\n((?:\s+\w+: \S+\n)+)/.exec(text)[1];
  const values = Object.fromEntries(block.trim().split('\n').map((l) => l.trim().split(': ')));
  return { name, values };
}

/** stringData of the Argo CD Secret `native` (the command) writes for `input` without sealing. */
export function plainValues(native, input, spawnSync) {
  const run = spawnSync(native, [], { input });
  assert.equal(run.status, 0, run.stderr.toString());
  const text = run.stdout.toString();
  const block = /stringData:\n([\s\S]*)$/.exec(text.slice(text.lastIndexOf('kind: Secret')))[1];
  const values = {};
  let key;
  for (const line of block.split('\n')) {
    const entry = /^ {2}(\w+): ?(.*)$/.exec(line);
    if (entry) {
      key = entry[1];
      values[key] = entry[2] === '|-' ? '' : entry[2];
    } else if (line.startsWith('    ') && key) {
      values[key] += (values[key] ? '\n' : '') + line.slice(4);
    }
  }
  return values;
}

/** Asserts the output's one SealedSecret opens to `expected` (the plain Secret's values). */
export function opensTo(output, expected, label = (name) => `argocd/${name}`) {
  const { name, values } = sealedSecret(output);
  assert.deepEqual(Object.keys(values).sort(), Object.keys(expected).sort());
  for (const [key, value] of Object.entries(values)) {
    assert.equal(open(value, label(name)), expected[key], `encryptedData.${key}`);
  }
  assert.ok(!output.includes(privateKey.split('\n')[1]), 'no key material in the output');
  return values;
}
