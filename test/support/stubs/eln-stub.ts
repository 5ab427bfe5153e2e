/**
 * The vendor stub server the ELN stubs are built on: node:http on 127.0.0.1 (port 0), routes by
 * method and path pattern, records every request, honours `Idempotency-Key` on creates, and can
 * be told to fail (an HTTP error for the next N matching calls, a lost response after the work
 * was done, or down: connections are dropped).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

export interface StubReply {
  status: number;
  body?: unknown;
}

type Handler = (req: RecordedRequest, params: Record<string, string>) => StubReply;

interface Route {
  method: string;
  pattern: RegExp;
  names: string[];
  handler: Handler;
  idempotent: boolean;
}

export interface FailureSpec {
  /** How many matching calls fail (default 1; Infinity until `recover()`). */
  times?: number;
  /** HTTP status answered (default 500). */
  status?: number;
  /**
   * `error`: answer `status` without doing anything (default). `after`: do the work, then answer
   * `status` (the response is "lost"). `down`: drop the connection. `hang`: never answer (the
   * caller times out; the connection closes with the stub).
   */
  mode?: 'error' | 'after' | 'down' | 'hang';
  /** Only calls this matches fail (default: every call). */
  match?: (req: RecordedRequest) => boolean;
}

export class StubServer {
  readonly requests: RecordedRequest[] = [];
  #routes: Route[] = [];
  #failures: (FailureSpec & { left: number })[] = [];
  #idempotent = new Map<string, StubReply>();
  #server: http.Server;
  #auth: (headers: http.IncomingHttpHeaders) => boolean;
  url = '';

  constructor(auth: (headers: http.IncomingHttpHeaders) => boolean) {
    this.#auth = auth;
    this.#server = http.createServer((req, res) => void this.#handle(req, res));
  }

  async listen(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** `path` with `:name` parameters. `idempotent`: a repeated Idempotency-Key replays the first reply. */
  route(method: string, path: string, handler: Handler, opts: { idempotent?: boolean } = {}): void {
    const names: string[] = [];
    const pattern = new RegExp('^' + path.replace(/:(\w+)/g, (_m, name: string) => (names.push(name), '([^/]+)')) + '$');
    this.#routes.push({ method, pattern, names, handler, idempotent: opts.idempotent ?? false });
  }

  fail(spec: FailureSpec = {}): void {
    this.#failures.push({ ...spec, left: spec.times ?? 1 });
  }

  /** Down until `recover()`: every connection is dropped. */
  down(): void {
    this.fail({ mode: 'down', times: Infinity });
  }

  recover(): void {
    this.#failures = [];
  }

  /** Recorded requests, optionally only `METHOD /path` (exact) ones. */
  calls(method?: string, path?: string | RegExp): RecordedRequest[] {
    return this.requests.filter(
      (r) => (!method || r.method === method) && (!path || (typeof path === 'string' ? r.path === path : path.test(r.path))),
    );
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown = undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    const recorded: RecordedRequest = { method: req.method ?? 'GET', path: (req.url ?? '/').split('?')[0], headers: req.headers, body };
    this.requests.push(recorded);

    const failure = this.#failures.find((f) => f.left > 0 && (!f.match || f.match(recorded)));
    if (failure) failure.left--;
    if (failure?.mode === 'down') {
      req.socket.destroy();
      return;
    }
    if (failure?.mode === 'hang') return;
    if (failure && failure.mode !== 'after') return send(res, { status: failure.status ?? 500, body: { message: 'stub failure' } });

    const reply = this.#dispatch(recorded);
    if (failure) return send(res, { status: failure.status ?? 500, body: { message: 'stub failure after the work was done' } });
    send(res, reply);
  }

  #dispatch(req: RecordedRequest): StubReply {
    if (!this.#auth(req.headers)) return { status: 401, body: { message: 'unauthorized' } };
    for (const route of this.#routes) {
      const m = route.method === req.method ? route.pattern.exec(req.path) : null;
      if (!m) continue;
      const params = Object.fromEntries(route.names.map((n, i) => [n, decodeURIComponent(m[i + 1])]));
      const key = req.headers['idempotency-key'];
      if (route.idempotent && typeof key === 'string') {
        const earlier = this.#idempotent.get(`${req.method} ${req.path} ${key}`);
        if (earlier) return earlier;
        const reply = route.handler(req, params);
        if (reply.status < 300) this.#idempotent.set(`${req.method} ${req.path} ${key}`, reply);
        return reply;
      }
      return route.handler(req, params);
    }
    return { status: 404, body: { message: 'no such route' } };
  }
}

function send(res: http.ServerResponse, reply: StubReply): void {
  res.writeHead(reply.status, { 'content-type': 'application/json' });
  res.end(reply.body === undefined ? '' : JSON.stringify(reply.body));
}
