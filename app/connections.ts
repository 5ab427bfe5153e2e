import type http from 'node:http';
import type https from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';

/**
 * Tracks the HTTPS server's connections so shutdown can close at once every connection that
 * carries no request. Node's closeIdleConnections() only knows connections that have finished a
 * request: one a client opened ahead of time (browsers and pools pre-connect, with or without
 * the TLS handshake) counts as busy, and server.close() would wait for it until it times out.
 */
export function trackConnections(server: https.Server, plainHttp: boolean) {
  const open = new Set<Socket>();
  const secured = new WeakSet<Socket>();
  /** Requests in flight per raw socket. */
  const inFlight = new Map<Socket, number>();
  let draining = false;

  // The TCP socket under a TLS socket (Node keeps it as `_parent`); a plain socket is its own.
  const rawOf = (socket: Socket): Socket => (socket as TLSSocket & { _parent?: Socket })._parent ?? socket;

  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      inFlight.delete(socket);
    });
  });
  server.on('secureConnection', (socket: TLSSocket) => secured.add(rawOf(socket)));
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const raw = rawOf(req.socket);
    inFlight.set(raw, (inFlight.get(raw) ?? 0) + 1);
    res.once('close', () => {
      const left = (inFlight.get(raw) ?? 1) - 1;
      if (left > 0) return void inFlight.set(raw, left);
      inFlight.delete(raw);
      // A response that began before shutdown may have promised keep-alive: end it now that it is done.
      if (draining) req.socket.end();
    });
  });

  return {
    /** Stops keeping connections open: closes those without a request in flight. */
    closeIdle() {
      draining = true;
      for (const socket of open) {
        if (inFlight.has(socket)) continue;
        // With `plainHttp` (a trusted proxy), a socket that sent bytes but no TLS handshake may
        // carry a plain request this tracker does not see: Node closes those once idle.
        if (plainHttp && socket.bytesRead > 0 && !secured.has(socket)) continue;
        socket.destroy();
      }
    },
  };
}
