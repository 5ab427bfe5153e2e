import type { S3Client } from '@aws-sdk/client-s3';

type Sdk = typeof import('@aws-sdk/client-s3');
let loading: Promise<Sdk> | undefined;
/** The AWS SDK is large (tens of MB of heap): loaded the first time an S3 drive is used, not at start-up. */
const sdk = (): Promise<Sdk> => (loading ??= import('@aws-sdk/client-s3'));
import { baseName, childPath } from '../paths.ts';
import { DriveUnavailableError, FolderMissingError, type FolderInfo, type StorageDriver } from './driver.ts';

export interface S3Settings {
  endpoint: string;
  region: string;
  bucket: string;
  /** Key prefix the drive lives under (`lab/`); the drive root is this prefix. */
  prefix?: string;
  /** Path-style URLs (`endpoint/bucket/key`), as most self-hosted S3-compatible servers need. */
  forcePathStyle?: boolean;
}

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/**
 * Any S3-compatible endpoint through the official AWS SDK. S3 has no folders: a folder is a
 * key prefix ending in `/`; it exists when any object has that prefix, and creating one writes
 * the zero-byte marker object `<prefix><path>/` that S3 consoles also use (writing it twice is
 * harmless, so creation is idempotent). Only HeadObject, ListObjectsV2 (never paged: at most one key), PutObject and HeadBucket are used.
 */
export class S3Driver implements StorageDriver {
  #client: S3Client | undefined;
  readonly #credentials: S3Credentials | null;
  readonly #settings: S3Settings;
  readonly #prefix: string;
  readonly #timeoutMs: number;

  constructor(settings: S3Settings, credentials: S3Credentials | null, timeoutMs: number) {
    this.#settings = settings;
    this.#timeoutMs = timeoutMs;
    const prefix = (settings.prefix ?? '').replace(/^\/+|\/+$/g, '');
    this.#prefix = prefix ? `${prefix}/` : '';
    this.#credentials = credentials;
  }

  #clientOf(s3: Sdk): S3Client {
    const settings = this.#settings;
    const credentials = this.#credentials;
    const timeoutMs = this.#timeoutMs;
    return (this.#client ??= new s3.S3Client({
      endpoint: settings.endpoint,
      region: settings.region,
      forcePathStyle: settings.forcePathStyle ?? false,
      ...(credentials ? { credentials } : {}),
      // The job queue retries with backoff; retrying inside one call would only stretch it.
      maxAttempts: 1,
      // Checksums only where S3 requires them: many S3-compatible servers reject the newer
      // default checksum headers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: { connectionTimeout: timeoutMs, requestTimeout: timeoutMs },
    }));
  }

  async folderExists(path: string): Promise<boolean> {
    return (await this.describe(path)) !== null;
  }

  async describe(path: string): Promise<FolderInfo | null> {
    const { bucket } = this.#settings;
    if (path === '' && this.#prefix === '') {
      await this.#call((c, o, s3) => c.send(new s3.HeadBucketCommand({ Bucket: bucket }), o));
      return { path, name: bucket, modifiedAt: null };
    }
    const prefix = this.#key(path);
    const name = baseName(path, this.#prefix ? baseName(this.#prefix.slice(0, -1), bucket) : bucket);
    // The marker first (HEAD is the cheapest call, and gives the folder's date) ...
    const marker = await this.#call((c, o, s3) => c.send(new s3.HeadObjectCommand({ Bucket: bucket, Key: prefix }), o), true);
    if (marker) return { path, name, modifiedAt: marker.LastModified?.toISOString() ?? null };
    // ... else any object under the prefix: a folder made by a tool that writes no markers.
    const res = await this.#call((c, o, s3) => c.send(new s3.ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, MaxKeys: 1 }), o));
    return res.Contents?.length ? { path, name, modifiedAt: null } : null;
  }

  async createFolder(parent: string, name: string): Promise<FolderInfo> {
    if (!(await this.folderExists(parent))) throw new FolderMissingError(parent);
    const path = childPath(parent, name);
    const input = { Bucket: this.#settings.bucket, Key: this.#key(path), Body: new Uint8Array(0), ContentLength: 0 };
    await this.#call((c, o, s3) => c.send(new s3.PutObjectCommand(input), o));
    return (await this.describe(path)) ?? { path, name, modifiedAt: null };
  }

  close(): void {
    this.#client?.destroy();
  }

  /** The key prefix of a folder: `<drive prefix><path>/` (the drive prefix alone for the root). */
  #key(path: string): string {
    return path === '' ? this.#prefix : `${this.#prefix}${path}/`;
  }

  /**
   * One SDK call, bounded by the drive's timeout, failures mapped to DriveUnavailableError;
   * with `notFound`, a 404 answer is null (HEAD of a missing object).
   */
  async #call<T>(send: Send<T>, notFound: true): Promise<T | null>;
  async #call<T>(send: Send<T>): Promise<T>;
  async #call<T>(send: Send<T>, notFound = false): Promise<T | null> {
    const s3 = await sdk();
    try {
      return await send(this.#clientOf(s3), { abortSignal: AbortSignal.timeout(this.#timeoutMs) }, s3);
    } catch (err) {
      if (notFound && err instanceof s3.S3ServiceException && err.$metadata.httpStatusCode === 404) return null;
      throw describeFailure(s3, err, this.#timeoutMs);
    }
  }
}

/** Any failure of an S3 call as the reason the drive is unavailable (never with credentials). */
type Send<T> = (client: S3Client, options: { abortSignal: AbortSignal }, s3: Sdk) => Promise<T>;

function describeFailure(s3: Sdk, err: unknown, timeoutMs: number): DriveUnavailableError {
  if (err instanceof s3.S3ServiceException) {
    const status = err.$metadata.httpStatusCode;
    if (err.name === 'NoSuchBucket' || status === 404) return new DriveUnavailableError('the bucket does not exist');
    if (status === 401 || status === 403) return new DriveUnavailableError(`the S3 endpoint refused the credentials (${err.name})`);
    return new DriveUnavailableError(`the S3 endpoint answered ${status ?? ''} ${err.name}`.replace('  ', ' '));
  }
  const e = err as Error & { code?: string };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return new DriveUnavailableError(`the S3 endpoint did not answer within ${timeoutMs} ms`);
  return new DriveUnavailableError(`the S3 endpoint is unreachable (${e.code ?? e.name})`);
}
