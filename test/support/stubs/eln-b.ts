/**
 * A stub of the ELN platform B vendor API (plugins/eln-b/README.md, "Vendor API"): numbered
 * project containers and their entries in memory, API-key auth, idempotent creates.
 */
import type { Test } from 'tap';
import { StubServer } from './eln-stub.ts';

export interface ElnBProject {
  id: number;
  name: string;
}

export interface ElnBEntry {
  id: number;
  projectId: number;
  title: string;
}

export class ElnBStub extends StubServer {
  readonly apiKey: string;
  readonly projects = new Map<number, ElnBProject>();
  readonly entries = new Map<number, ElnBEntry>();
  #next = 100;

  constructor(apiKey: string) {
    super((headers) => headers['x-api-key'] === apiKey);
    this.apiKey = apiKey;
    this.route('GET', '/api/projects/:id', (_req, { id }) => {
      const project = this.projects.get(Number(id));
      return project ? { status: 200, body: project } : { status: 404, body: { message: `project ${id} not found` } };
    });
    this.route(
      'POST',
      '/api/projects/:id/entries',
      ({ body }, { id }) => {
        const project = this.projects.get(Number(id));
        if (!project) return { status: 404, body: { message: `project ${id} not found` } };
        if (typeof body?.title !== 'string' || !body.title) return { status: 422, body: { message: 'title is required' } };
        const entry = { id: this.#next++, projectId: project.id, title: body.title };
        this.entries.set(entry.id, entry);
        return { status: 201, body: entry };
      },
      { idempotent: true },
    );
  }

  addProject(name: string): ElnBProject {
    const project = { id: this.#next++, name };
    this.projects.set(project.id, project);
    return project;
  }

  entriesIn(projectId: number): ElnBEntry[] {
    return [...this.entries.values()].filter((e) => e.projectId === projectId);
  }
}

/** Starts a stub for this test (closed at its end). */
export async function startElnBStub(t: Test, apiKey = 'eln-b-key'): Promise<ElnBStub> {
  const stub = await new ElnBStub(apiKey).listen();
  t.teardown(() => stub.close());
  return stub;
}
