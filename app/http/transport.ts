import crypto from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { envelope, sendEnvelope } from './envelope.ts';
import { REQUEST_ID_HEADER, requestId } from './request-id.ts';

const HSTS = 'max-age=31536000; includeSubDomains';
/** Fastify's own default, which a custom server factory has to apply itself. */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;
/** A connection that sends nothing is dropped (the TLS handshake timeout applies only after). */
const FIRST_BYTE_TIMEOUT_MS = 30_000;
/**
 * A TLS handshake not done by then is dropped (Node's default is 120 s): a client that connects
 * and never finishes the handshake holds a descriptor until then, and there are only so many.
 */
export const HANDSHAKE_TIMEOUT_MS = 10_000;
/**
 * AEAD suites only (Mozilla's "intermediate" list): Node's default adds the CBC-SHA1 suites of
 * "HIGH" for TLS 1.2, which no current client needs. TLS 1.3 suites are always on.
 */
const CIPHERS = [
  'TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384', 'ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');
/** An error response still not flushed after this long (a peer that stopped reading) is dropped. */
const ERROR_FLUSH_MS = 5_000;

/**
 * Fastify's `serverFactory`: the HTTPS server. HSTS is set on the raw response before Fastify
 * sees the request, so it is on every response, including those Fastify produces before any
 * hook runs (a malformed URL) and hijacked ones (MCP). With `trustProxy`, the same port also
 * accepts plain HTTP from the TLS-terminating proxy.
 */
export function tlsServerFactory(tls: { cert: string; key: string }, trustProxy: boolean) {
  return (handler: http.RequestListener): https.Server => {
    // Host is checked in transportHeaders, so that its 400 carries the envelope (Node's has none).
    const server = https.createServer(
      { cert: tls.cert, key: tls.key, ciphers: CIPHERS, requireHostHeader: false, maxHeaderSize: PARSER_HEAD_LIMIT, handshakeTimeout: HANDSHAKE_TIMEOUT_MS },
      (req, res) => transportHeaders(server, req, res, handler),
    );
    server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
    // An `Expect` other than 100-continue: the envelope and the transport headers, not Node's bare 417.
    server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => {
      res.setHeader('strict-transport-security', HSTS);
      res.setHeader('x-content-type-options', 'nosniff');
      refuseRequest(req, res, 417, 'Only "Expect: 100-continue" is supported');
    });
    if (trustProxy) acceptPlainHttpFromProxy(server, (req, res) => transportHeaders(server, req, res, handler));
    return server;
  };
}

function transportHeaders(server: https.Server, req: http.IncomingMessage, res: http.ServerResponse, handler: http.RequestListener) {
  res.setHeader('strict-transport-security', HSTS);
  res.setHeader('x-content-type-options', 'nosniff');
  // RFC 9112, 3.2: an HTTP/1.1 request without Host is a 400.
  if (req.httpVersion === '1.1' && req.headers.host === undefined) return refuseRequest(req, res, 400, 'The request has no Host header (HTTP/1.1 requires one)');
  if ((req.url ?? '').length > LONG_REQUEST_LINE) return refuseRequest(req, res, 414, 'The URL is too long');
  if (headSize(req) > HEAD_LIMIT) return refuseRequest(req, res, 431, 'The request headers are too large');
  // Node decodes chunked only: a body in another transfer coding would be read as it came (RFC 9112, 6.1: 501).
  const transferCoding = req.headers['transfer-encoding'];
  if (transferCoding !== undefined && transferCoding.trim().toLowerCase() !== 'chunked') {
    return refuseRequest(req, res, 501, 'Transfer-Encoding other than chunked is not supported');
  }
  // Once the server is closing, a response still in flight ends its keep-alive connection
  // (Node only closes the connections idle at close time): shutdown need not wait for the
  // keep-alive timeout of every client that had a request running.
  const writeHead = res.writeHead;
  res.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
    if (!server.listening) this.shouldKeepAlive = false;
    return (writeHead as (...a: unknown[]) => http.ServerResponse).apply(this, args);
  } as typeof res.writeHead;
  handler(req, res);
}

/** A URL longer than this is refused (414) before any route or key check sees it. */
const LONG_REQUEST_LINE = 8 * 1024;
/** A request head larger than this is refused (431). */
const HEAD_LIMIT = 16 * 1024;
/**
 * Node's parser takes heads up to this size, so that the two limits above are judged on the
 * parsed request (a URL of 12 KiB is a 414, not the parser's overflow); past it, clientErrorResponse.
 */
const PARSER_HEAD_LIMIT = 64 * 1024;

/** The size of a request's head as sent: request line and header lines. */
function headSize(req: http.IncomingMessage): number {
  let size = (req.method ?? '').length + (req.url ?? '').length + 12;
  for (let i = 0; i < req.rawHeaders.length; i += 2) size += req.rawHeaders[i].length + req.rawHeaders[i + 1].length + 4;
  return size;
}

/** The path of a request line or URL as an envelope names it: no query, at most 200 characters. */
const pathOf = (url: string) => url.split('?')[0].slice(0, 200);

/** Answers a request refused before Fastify sees it: the envelope, a request id, and the connection closed. */
function refuseRequest(req: http.IncomingMessage, res: http.ServerResponse, status: number, message: string) {
  const body = JSON.stringify(envelope(status, message, pathOf(req.url ?? '')));
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), [REQUEST_ID_HEADER]: requestId(req), connection: 'close' });
  res.end(body);
}

/**
 * Whether the packet on which the parser overflowed is part of the request line: a long request
 * line, no line end yet, or the end of the request line (`… HTTP/1.1`) seen from the middle of it.
 */
const urlOverflowed = (head: string, line: string) =>
  line.length > LONG_REQUEST_LINE || !head.includes('\r\n') || (!/^[A-Z]+ /.test(line) && /^\S* HTTP\/1\.[01]$/.test(line));

/**
 * Fastify's `clientErrorHandler`: a request Node cannot parse (a head over 64 KiB, a bad header
 * line, a malformed chunk) never reaches a route; it still gets the error envelope (and HSTS),
 * not Node's or Fastify's bare text. The connection is closed: its framing is lost.
 */
export function clientErrorResponse(err: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // A TLS failure (a handshake that timed out or went wrong): nothing can be written on a
  // connection without a session, and ending it would wait for ever for that write. Drop it.
  if (!socket.writable || /^ERR_(TLS|SSL)_/.test(err.code ?? '')) {
    socket.destroy();
    return;
  }
  const head = Buffer.isBuffer(err.rawPacket) ? err.rawPacket.toString('latin1') : '';
  const line = head.split('\r\n', 1)[0];
  const [status, message] = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'The request took too long to arrive']
    : err.code === 'HPE_HEADER_OVERFLOW' && urlOverflowed(head, line) ? [414, 'The URL is too long']
    : err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'The request headers are too large']
    : [400, 'The request is not valid HTTP'];
  const body = JSON.stringify(envelope(status, message, pathOf(/^[A-Z]+ (\/\S*)/.exec(line)?.[1] ?? '')));
  // The request's own X-Request-Id cannot be read from a head Node refused: a fresh one.
  socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n`
    + `Content-Length: ${Buffer.byteLength(body)}\r\nStrict-Transport-Security: ${HSTS}\r\nX-Content-Type-Options: nosniff\r\n`
    + `X-Request-Id: ${crypto.randomUUID()}\r\nConnection: close\r\n\r\n${body}`);
  // A peer that does not read its answer does not hold the connection open either.
  setTimeout(() => socket.destroy(), ERROR_FLUSH_MS).unref();
}

/**
 * Root onRequest hook, only with a trusted TLS-terminating proxy: a request that reached the
 * proxy over plain HTTP (`X-Forwarded-Proto: http`), or a plain-HTTP connection that does not
 * say it came through the proxy over HTTPS, is refused with 403 and the error envelope.
 */
export async function proxyTransportGuard(request: FastifyRequest, reply: FastifyReply) {
  const forwarded = String(request.headers['x-forwarded-proto'] ?? '').split(',')[0].trim().toLowerCase();
  const encrypted = Boolean((request.raw.socket as TLSSocket).encrypted);
  if (forwarded === 'http' || (!encrypted && forwarded !== 'https')) {
    return sendEnvelope(request, reply, 403, 'HTTPS is required');
  }
}

/**
 * With LABDATA_TRUST_PROXY=true the TLS port also accepts plain HTTP from the proxy: the first
 * byte of a connection tells a TLS handshake (0x16) from an HTTP request. Without it, a plain
 * request fails the TLS handshake and gets no response at all.
 */
export function acceptPlainHttpFromProxy(server: https.Server, handler: http.RequestListener): http.Server {
  const plain = http.createServer({ requireHostHeader: false, maxHeaderSize: PARSER_HEAD_LIMIT }, handler);
  plain.keepAliveTimeout = server.keepAliveTimeout;
  // What the proxy sends that Node cannot parse gets the same envelope as over TLS (Fastify's
  // clientErrorHandler listens on `server` only).
  plain.on('clientError', (err: Error, socket: Socket) => server.emit('clientError', err, socket));
  // Node tracks a server's connections (for closeIdleConnections and request timeouts) from
  // its 'listening' event; `plain` never listens itself, its sockets come from `server`.
  plain.emit('listening');
  const tlsListeners = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    // Until a server takes the socket over, nothing else would handle its errors (a reset
    // would otherwise be an uncaught exception) or a client that never sends a byte.
    const drop = () => socket.destroy();
    socket.on('error', drop);
    socket.setTimeout(FIRST_BYTE_TIMEOUT_MS, drop);
    socket.once('data', (chunk: Buffer) => {
      socket.off('error', drop);
      socket.setTimeout(0);
      socket.off('timeout', drop);
      socket.pause();
      socket.unshift(chunk);
      if (chunk[0] === 0x16) {
        // The TLS socket reads what is buffered on the raw socket when it starts; resuming the
        // raw socket here would drain (and lose) the ClientHello first.
        for (const listener of tlsListeners) listener.call(server, socket);
      } else {
        plain.emit('connection', socket);
        socket.resume();
      }
    });
  });
  // Plain connections belong to `plain`, which never listens: closing the HTTPS server (Node
  // closes idle connections on close; Fastify may close all) has to reach them too, or an
  // idle keep-alive connection from the proxy holds shutdown up until it times out.
  const closeIdle = server.closeIdleConnections.bind(server);
  const closeAll = server.closeAllConnections.bind(server);
  server.closeIdleConnections = () => {
    closeIdle();
    // close() closes the idle connections and stops the connection checks of `plain`.
    plain.close();
  };
  server.closeAllConnections = () => {
    closeAll();
    plain.closeAllConnections();
  };
  return plain;
}
