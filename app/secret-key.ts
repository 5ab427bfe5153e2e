import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../core/config.ts';
import { SecretBox } from '../core/secrets.ts';
import { parseSecretKey } from './config.ts';

const KEY_FILE = 'secret.key';

/** Reads `<dataDir>/secret.key`, creating it (0600, exclusively) the first time. */
export function dataDirSecretKey(dataDir: string): Buffer {
  const file = path.join(dataDir, KEY_FILE);
  try {
    return parseSecretKey(fs.readFileSync(file, 'utf8'), file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, crypto.randomBytes(32).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    // Another process created it first: use theirs.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return parseSecretKey(fs.readFileSync(file, 'utf8'), file);
}

/**
 * The kernel's `services.secrets` with the deployment's key: `LABDATA_SECRET_KEY` (base64 or
 * hex), or, when it is unset, a key generated once into `<dataDir>/secret.key` (mode 0600) and
 * reused on every start. The key is read on first use, so commands that never touch a secret
 * never create the file.
 */
export function secretBoxFor(config: Pick<Config, 'secretKey' | 'dataDir'>): SecretBox {
  // A malformed key fails at start, not at the first secret.
  if (config.secretKey) {
    const key = parseSecretKey(config.secretKey);
    return new SecretBox(() => key);
  }
  return new SecretBox(() => dataDirSecretKey(config.dataDir));
}
