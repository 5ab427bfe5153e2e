// A local stand-in for a GitLab-style Git hosting service (REST API v4), for connector tests.
// It keeps groups and projects in memory, records every request, checks the PRIVATE-TOKEN
// header, and can be told to fail (an HTTP status for the next N requests), to drop
// connections (down) or to answer too late (hang).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  /** Path without the query string, e.g. `/api/v4/groups/12`. */
  path: string;
  query: Record<string, string>;
  headers: IncomingMessage['headers'];
  body: any;
}

interface StubGroup {
  id: number;
  path: string;
}

interface StubProject {
  id: number;
  name: string;
  path: string;
  namespaceId: number;
  description: string | null;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

export class GitlabStub {
  readonly token: string;
  url = '';
  readonly requests: RecordedRequest[] = [];
  readonly groups: StubGroup[] = [];
  readonly projects: StubProject[] = [];
  /** Connections are dropped without an answer while set. */
  down = false;
  /** Requests are never answered while set (for timeouts). */
  hang = false;
  #failures: { status: number; remaining: number } | null = null;
  #nextId = 100;
  #server: Server;
  #hung = new Set<ServerResponse>();

  constructor(token: string) {
    this.token = token;
    this.#server = createServer((req, res) => void this.#handle(req, res));
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const res of this.#hung) res.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** A group named by its path; returns it with its numeric id. */
  addGroup(path: string): StubGroup {
    const group = { id: this.#nextId++, path };
    this.groups.push(group);
    return group;
  }

  removeGroup(path: string): void {
    const i = this.groups.findIndex((g) => g.path === path);
    if (i >= 0) this.groups.splice(i, 1);
  }

  /** The next `count` requests (default: all until `recover()`) get `status`. */
  fail(status = 500, count = Infinity): void {
    this.#failures = { status, remaining: count };
  }

  recover(): void {
    this.#failures = null;
    this.down = false;
    this.hang = false;
  }

  /** Recorded requests that match method and path prefix. */
  calls(method: string, pathPrefix = ''): RecordedRequest[] {
    return this.requests.filter((r) => r.method === method && r.path.startsWith(pathPrefix));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://stub');
    this.requests.push({
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body: text ? JSON.parse(text) : undefined,
    });
    if (this.down) return void res.socket?.destroy();
    if (this.hang) return void this.#hung.add(res);
    if (this.#failures && this.#failures.remaining > 0) {
      this.#failures.remaining--;
      return send(res, this.#failures.status, { message: 'stub failure' });
    }
    if (req.headers['private-token'] !== this.token) return send(res, 401, { message: '401 Unauthorized' });
    this.#route(req.method ?? 'GET', url, res, text ? JSON.parse(text) : {});
  }

  #route(method: string, url: URL, res: ServerResponse, body: Record<string, unknown>): void {
    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    // /api/v4/groups/:id and /api/v4/groups/:id/projects
    if (method === 'GET' && parts[0] === 'api' && parts[1] === 'v4' && parts[2] === 'groups' && parts.length >= 4) {
      const group = this.#findGroup(parts[3]);
      if (!group) return send(res, 404, { message: '404 Group Not Found' });
      if (parts.length === 4) return send(res, 200, { id: group.id, name: group.path, path: group.path, full_path: group.path });
      if (parts[4] === 'projects') {
        const search = url.searchParams.get('search') ?? '';
        const found = this.projects.filter((p) => p.namespaceId === group.id && (p.path.includes(search) || p.name.includes(search)));
        return send(res, 200, found.map((p) => this.#projectJson(p)));
      }
    }
    if (method === 'POST' && url.pathname === '/api/v4/projects') {
      const group = this.groups.find((g) => g.id === body.namespace_id);
      if (!group) return send(res, 404, { message: '404 Namespace Not Found' });
      const path = String(body.path ?? body.name);
      if (this.projects.some((p) => p.namespaceId === group.id && p.path === path)) {
        return send(res, 400, { message: { name: ['has already been taken'], path: ['has already been taken'] } });
      }
      const project = { id: this.#nextId++, name: String(body.name), path, namespaceId: group.id, description: (body.description as string) ?? null };
      this.projects.push(project);
      return send(res, 201, this.#projectJson(project));
    }
    send(res, 404, { message: '404 Not Found' });
  }

  #findGroup(id: string): StubGroup | undefined {
    return this.groups.find((g) => String(g.id) === id || g.path === id);
  }

  #projectJson(p: StubProject) {
    const group = this.groups.find((g) => g.id === p.namespaceId);
    const full = `${group?.path ?? 'unknown'}/${p.path}`;
    return {
      id: p.id,
      name: p.name,
      path: p.path,
      description: p.description,
      path_with_namespace: full,
      namespace: { id: p.namespaceId, full_path: group?.path },
      http_url_to_repo: `${this.url}/${full}.git`,
      web_url: `${this.url}/${full}`,
    };
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Starts a stub (closed when the test ends). */
export async function startGitlabStub(t: Teardown, token = 'glpat-test-token'): Promise<GitlabStub> {
  const stub = new GitlabStub(token);
  await stub.listen();
  t.teardown(() => stub.close());
  return stub;
}
