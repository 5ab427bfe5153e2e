/**
 * Secrets at rest (integration tokens, drive keys): AES-256-GCM with a 32-byte key from
 * `LABDATA_SECRET_KEY` (base64 or hex), or, when it is unset, a key generated once into
 * `<dataDir>/secret.key` (mode 0600) and reused on every start. The key is resolved on first use,
 * so commands that never touch a secret never create the file.
 *
 * Sealed values are text: `v1.<iv b64url>.<tag b64url>.<ciphertext b64url>`. They are never
 * logged nor returned; plugins store them and open them only to call the external system.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './config.ts';
import { parseSecretKey } from './config.ts';

const VERSION = 'v1';
const KEY_FILE = 'secret.key';

export function encryptSecret(plain: string, key: Buffer): string {
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join('.');
}

export function decryptSecret(sealed: string, key: Buffer): string {
  const [version, iv, tag, ciphertext] = sealed.split('.');
  if (version !== VERSION || !iv || !tag || ciphertext === undefined) throw new Error('not a sealed secret');
  const decipher = crypto.createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  try {
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    // Never echo the value; the usual cause is a changed key.
    throw new Error('a stored secret cannot be decrypted: was LABDATA_SECRET_KEY (or the data dir\'s secret.key) changed?');
  }
}

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

/** The kernel service `services.secrets`: seal and open JSON values with the deployment's key. */
export class SecretBox {
  #key: Buffer | undefined;
  #load: () => Buffer;

  constructor(load: () => Buffer) {
    this.#load = load;
  }

  static fromConfig(config: Pick<Config, 'secretKey' | 'dataDir'>): SecretBox {
    // A malformed key fails at start, not at the first secret.
    if (config.secretKey) {
      const key = parseSecretKey(config.secretKey);
      return new SecretBox(() => key);
    }
    return new SecretBox(() => dataDirSecretKey(config.dataDir));
  }

  #keyBuffer(): Buffer {
    return (this.#key ??= this.#load());
  }

  /** Encrypts any JSON value (an object of credentials, a token string). */
  seal(value: unknown): string {
    return encryptSecret(JSON.stringify(value), this.#keyBuffer());
  }

  open<T = unknown>(sealed: string): T {
    return JSON.parse(decryptSecret(sealed, this.#keyBuffer())) as T;
  }
}
