// A webhook receiver on loopback for the webhooks tests: records what arrives, answers what the
// test says, and verifies signatures with the `standardwebhooks` package, as an integrator would.
import http from 'node:http';
import { Webhook } from 'standardwebhooks';

export interface Received {
  headers: Record<string, string>;
  body: string;
  json: any;
}

export class Receiver {
  readonly url: string;
  readonly received: Received[] = [];
  /** The status to answer a request with (default 200), or a status and a body; may delay its answer. */
  answer: (r: Received) => number | { status: number; body?: string | Buffer; headers?: Record<string, string> } | Promise<number> = () => 200;
  private constructor(url: string) {
    this.url = url;
  }

  static async start(t: { teardown(fn: () => unknown): void }, path = '/hook'): Promise<Receiver> {
    const state: { receiver?: Receiver } = {};
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const r: Received = { headers: req.headers as Record<string, string>, body, json: body ? JSON.parse(body) : undefined };
        state.receiver!.received.push(r);
        const answer = await state.receiver!.answer(r);
        const { status, body: text = 'ok', headers = {} } = typeof answer === 'number' ? { status: answer } : answer;
        if (!res.destroyed) res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(text);
      });
    });
    server.keepAliveTimeout = 1000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const receiver = (state.receiver = new Receiver(`http://127.0.0.1:${port}${path}`));
    t.teardown(() => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }));
    return receiver;
  }

  /** What arrived for one event type (or all). */
  of(type?: string): Received[] {
    return this.received.filter((r) => !type || r.json?.type === type);
  }

  async waitFor(predicate: () => boolean, ms = 15_000, what = 'deliveries'): Promise<void> {
    const deadline = Date.now() + ms;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (${this.received.length} received)`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

/** The payload, verified with `secret` by the standardwebhooks package (throws when it does not verify). */
export function verify(secret: string, r: Received): unknown {
  return new Webhook(secret).verify(r.body, r.headers);
}
