import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { addressProblem, checkedLookup, urlHost } from '../../lib/integrations/index.ts';
import { addressPolicy } from './subscriptions.ts';

/** Any 2xx within this long is delivered (README, "Outcome"). */
export const TIMEOUT_MS = 10_000;
/** A receiver's answer is read up to this much, then the connection is dropped. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface Outcome {
  delivered: boolean;
  /** The HTTP status, or null when no answer came. */
  status: number | null;
  /** Why it failed (never the receiver's body, which may echo anything). */
  error: string | null;
}

/**
 * POSTs deliveries with node:http(s): `lookup` checks every address a host resolves to before
 * the connection is made to it (lib/integrations `checkedLookup`), redirects are not followed
 * (node:http never does: a 3xx is a failed attempt), the answer is read up to 64 KiB and the
 * whole exchange, connection included, gets 10 s. Connections are kept alive per receiver, so a
 * backlog to one receiver pays for one TLS handshake, not one per delivery.
 */
export class Sender {
  readonly #allowPrivate: boolean;
  readonly #agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: 16 }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: 16 }),
  };

  constructor(allowPrivate: boolean) {
    this.#allowPrivate = allowPrivate;
  }

  send(target: string, headers: Record<string, string>, body: string): Promise<Outcome> {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return Promise.resolve(failed('the URL is not valid'));
    }
    const policy = addressPolicy(url.protocol, this.#allowPrivate);
    if (!policy) return Promise.resolve(failed(`${url.protocol} URLs are not allowed`));
    // An address in the URL is connected to without a lookup: checked here instead.
    const host = urlHost(url);
    const literal = net.isIP(host) ? addressProblem(host, policy) : undefined;
    if (literal) return Promise.resolve(failed(`refused: the address ${literal}`));
    const client = url.protocol === 'https:' ? https : http;
    return new Promise<Outcome>((resolve) => {
      let settled = false;
      let answered: Outcome | undefined;
      const finish = (outcome: Outcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(outcome);
      };
      const req = client.request(url, {
        method: 'POST',
        agent: this.#agents[url.protocol as 'http:' | 'https:'],
        lookup: checkedLookup(policy),
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'labdata-webhooks/1.0' },
      });
      // A status within the time decides, even if the body is still coming.
      const timer = setTimeout(() => {
        req.destroy();
        finish(answered ?? failed('timed out after 10 s'));
      }, TIMEOUT_MS);
      req.on('error', (err: NodeJS.ErrnoException) => finish(failed(err.code === 'EADDRREFUSED' ? `refused: ${err.message}` : `not reached (${err.code ?? err.message})`)));
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        const outcome: Outcome = (answered = status >= 200 && status < 300 ? { delivered: true, status, error: null } : { delivered: false, status, error: `HTTP ${status}` });
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          // Enough: the status decides; the rest is never read (nor the socket kept).
          if (read > MAX_RESPONSE_BYTES) {
            res.destroy();
            finish(outcome);
          }
        });
        res.on('end', () => finish(outcome));
        res.on('error', () => finish(outcome));
        res.on('close', () => finish(outcome));
      });
      req.end(body);
    });
  }

  close(): void {
    this.#agents['http:'].destroy();
    this.#agents['https:'].destroy();
  }
}

const failed = (error: string): Outcome => ({ delivered: false, status: null, error });
