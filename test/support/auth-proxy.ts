import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export interface AuthProxy {
  /** http://localhost:PORT (a localhost URL, as the conformance DNS-rebinding scenario needs). */
  url: string;
  close(): Promise<void>;
}

/**
 * A plain-HTTP reverse proxy on localhost that adds `X-API-KEY` to every request and forwards
 * it to the HTTPS upstream. The MCP conformance CLI cannot send custom headers, so it talks to
 * this proxy. The client's Host and Origin are kept as they are, so that the server's
 * DNS-rebinding check sees what the client sent; TLS still verifies the upstream as localhost.
 */
export async function startAuthProxy(upstream: string, apiKey: string): Promise<AuthProxy> {
  const target = new URL(upstream);
  const proxy = http.createServer((req, res) => {
    const forward = https.request(
      {
        hostname: target.hostname,
        port: target.port,
        // Without it, Node takes the TLS server name from the Host header (the client's).
        servername: target.hostname,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, 'x-api-key': apiKey },
      },
      (upstreamRes) => {
        res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
        upstreamRes.pipe(res);
      },
    );
    forward.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as AddressInfo;
  return {
    url: `http://localhost:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        proxy.closeAllConnections();
        proxy.close(() => resolve());
      }),
  };
}
