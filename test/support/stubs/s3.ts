import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';

/**
 * A local S3-compatible server for tests: s3rver (npm), a real implementation of the S3 REST API
 * over a directory, checking AWS Signature V4 with its fixed credentials `S3RVER`/`S3RVER`. It
 * can be stopped and started again on the same port with the same data, to play a drive that
 * goes down and comes back.
 *
 * Known limit of s3rver 3.7 on Node >= 17: a *truncated* ListObjectsV2 answer fails (its
 * continuation tokens use DES, which OpenSSL 3 no longer offers). The S3 driver never pages
 * (HeadObject first, then ListObjectsV2 for at most one key), so that path is not needed here.
 */
export interface LocalS3 {
  endpoint: string;
  bucket: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** Where s3rver keeps the objects: `<directory>/<bucket>/<key>._S3rver_object` ... */
  directory: string;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export async function startLocalS3(t: { teardown(fn: () => unknown): void }, bucket = 'lab-data'): Promise<LocalS3> {
  const directory = await fs.mkdtemp(path.join(os.tmpdir(), 'labdata-s3-'));
  let port = 0;
  let server: S3rver | undefined;
  const start = async () => {
    server = new S3rver({ address: '127.0.0.1', port, silent: true, directory, configureBuckets: [{ name: bucket }] });
    ({ port } = await server.run());
  };
  const stop = async () => {
    await server?.close();
    server = undefined;
  };
  await start();
  t.teardown(async () => {
    await stop();
    await fs.rm(directory, { recursive: true, force: true });
  });
  return { endpoint: `http://127.0.0.1:${port}`, bucket, credentials: S3RVER_CREDENTIALS, directory, stop, start };
}

/**
 * An endpoint that accepts connections and never answers: a drive that is up but too slow.
 * Connections are closed on teardown.
 */
export async function startSilentEndpoint(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}
