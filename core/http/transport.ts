import http from 'node:http';
import type https from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from './envelope.ts';

const HSTS = 'max-age=31536000; includeSubDomains';

/**
 * Root onRequest hook: HSTS on every response, and, behind a trusted TLS-terminating proxy,
 * 403 for requests that reached the proxy over plain HTTP.
 */
export function transportGuard(trustProxy: boolean) {
  return async function guard(request: FastifyRequest, reply: FastifyReply) {
    reply.header('strict-transport-security', HSTS);
    if (!trustProxy) return;
    const forwarded = String(request.headers['x-forwarded-proto'] ?? '').split(',')[0].trim().toLowerCase();
    const encrypted = Boolean((request.raw.socket as TLSSocket).encrypted);
    if (forwarded === 'http' || (!encrypted && forwarded !== 'https')) {
      return sendError(request, reply, 403, 'HTTPS is required');
    }
  };
}

/**
 * With LABDATA_TRUST_PROXY=true the TLS port also accepts plain HTTP from the proxy: the first
 * byte of a connection tells a TLS handshake (0x16) from an HTTP request. Without it, a plain
 * request fails the TLS handshake and gets no response at all.
 */
export function acceptPlainHttpFromProxy(server: https.Server): http.Server {
  const handler = server.listeners('request')[0] as http.RequestListener;
  const plain = http.createServer(handler);
  const tlsListeners = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      socket.unshift(chunk);
      if (chunk[0] === 0x16) for (const listener of tlsListeners) listener.call(server, socket);
      else plain.emit('connection', socket);
      socket.resume();
    });
  });
  server.on('close', () => plain.closeAllConnections());
  return plain;
}
