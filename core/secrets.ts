/**
 * Secrets at rest (integration tokens, drive keys): AES-256-GCM with the deployment's 32-byte key
 * (`LABDATA_SECRET_KEY` or `<dataDir>/secret.key`: app/secret-key.ts), resolved on first use.
 *
 * Sealed values are text: `v1.<iv b64url>.<tag b64url>.<ciphertext b64url>`. They are never
 * logged nor returned; plugins store them and open them only to call the external system.
 */
import crypto from 'node:crypto';

const VERSION = 'v1';

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

/** The kernel service `services.secrets`: seal and open JSON values with the deployment's key. */
export class SecretBox {
  #key: Buffer | undefined;
  #load: () => Buffer;

  constructor(load: () => Buffer) {
    this.#load = load;
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
