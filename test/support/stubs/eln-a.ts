/**
 * A stub of the ELN platform A vendor API (plugins/eln-a/README.md, "Vendor API"): folders,
 * templates and entries in memory, bearer-token auth, idempotent creates. Tests seed folders
 * and templates, then assert on `requests` and on what exists.
 */
import type { Test } from 'tap';
import { StubServer } from './eln-stub.ts';

export interface ElnAFolder {
  id: string;
  name: string;
  parentId: string | null;
}

export interface ElnAEntry {
  id: string;
  folderId: string;
  name: string;
  templateId: string | null;
  fields: Record<string, unknown>;
}

export interface ElnATemplate {
  id: string;
  name: string;
  fields: string[];
}

export class ElnAStub extends StubServer {
  readonly token: string;
  readonly folders = new Map<string, ElnAFolder>();
  readonly entries = new Map<string, ElnAEntry>();
  readonly templates = new Map<string, ElnATemplate>();
  #next = 1;

  constructor(token: string) {
    super((headers) => headers.authorization === `Bearer ${token}`);
    this.token = token;
    this.route('GET', '/api/folders/:id', (_req, { id }) => {
      const folder = this.folders.get(id);
      return folder ? { status: 200, body: folder } : { status: 404, body: { message: `folder ${id} not found` } };
    });
    this.route(
      'POST',
      '/api/folders',
      ({ body }) => {
        if (typeof body?.name !== 'string' || typeof body?.parentId !== 'string') return { status: 422, body: { message: 'name and parentId are required' } };
        if (!this.folders.has(body.parentId)) return { status: 404, body: { message: `parent folder ${body.parentId} not found` } };
        return { status: 201, body: this.addFolder(body.name, body.parentId) };
      },
      { idempotent: true },
    );
    this.route('GET', '/api/templates/:id', (_req, { id }) => {
      const template = this.templates.get(id);
      return template ? { status: 200, body: template } : { status: 404, body: { message: `template ${id} not found` } };
    });
    this.route(
      'POST',
      '/api/entries',
      ({ body }) => {
        if (typeof body?.name !== 'string' || typeof body?.folderId !== 'string') return { status: 422, body: { message: 'name and folderId are required' } };
        if (!this.folders.has(body.folderId)) return { status: 404, body: { message: `folder ${body.folderId} not found` } };
        const template = body.templateId === undefined ? undefined : this.templates.get(body.templateId);
        if (body.templateId !== undefined && !template) return { status: 422, body: { message: `template ${body.templateId} not found` } };
        const fields = (body.fields ?? {}) as Record<string, unknown>;
        const unknown = Object.keys(fields).filter((f) => !template?.fields.includes(f));
        if (unknown.length) return { status: 422, body: { message: `unknown fields: ${unknown.join(', ')}` } };
        const entry: ElnAEntry = { id: `e-${this.#next++}`, folderId: body.folderId, name: body.name, templateId: body.templateId ?? null, fields };
        this.entries.set(entry.id, entry);
        return { status: 201, body: entry };
      },
      { idempotent: true },
    );
  }

  addFolder(name: string, parentId: string | null = null): ElnAFolder {
    const folder = { id: `f-${this.#next++}`, name, parentId };
    this.folders.set(folder.id, folder);
    return folder;
  }

  addTemplate(id: string, name: string, fields: string[] = []): ElnATemplate {
    const template = { id, name, fields };
    this.templates.set(id, template);
    return template;
  }

  childrenOf(parentId: string): ElnAFolder[] {
    return [...this.folders.values()].filter((f) => f.parentId === parentId);
  }

  entriesIn(folderId: string): ElnAEntry[] {
    return [...this.entries.values()].filter((e) => e.folderId === folderId);
  }
}

/** Starts a stub for this test (closed at its end). */
export async function startElnAStub(t: Test, token = 'eln-a-token'): Promise<ElnAStub> {
  const stub = await new ElnAStub(token).listen();
  t.teardown(() => stub.close());
  return stub;
}
