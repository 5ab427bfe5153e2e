/**
 * The ELN platform B connector: one small interface, and its implementation over the vendor's
 * REST API (README, "Vendor API") through the kernel's vendor HTTP client.
 */
import { VendorClient, type VendorEndpoint } from '../../lib/integrations/index.ts';

export interface ElnBConnector {
  /** Whether the project container exists (ELN B has no nested folders). */
  projectExists(projectId: number): Promise<boolean>;
  /** `key` makes the call idempotent: repeating it returns the entry the first call created. */
  createEntry(projectId: number, input: { title: string }, key: string): Promise<{ id: number }>;
}

export class HttpElnBConnector implements ElnBConnector {
  readonly #client: VendorClient;

  constructor(endpoint: VendorEndpoint) {
    this.#client = new VendorClient({ vendor: 'ELN B', baseUrl: endpoint.baseUrl, timeoutMs: endpoint.timeoutMs, headers: { 'x-api-key': endpoint.secret } });
  }

  async projectExists(projectId: number): Promise<boolean> {
    const res = await this.#client.request('GET', `api/projects/${projectId}`, { accept: [404] });
    return res.status === 200;
  }

  async createEntry(projectId: number, input: { title: string }, key: string): Promise<{ id: number }> {
    const res = await this.#client.request<{ id: number }>('POST', `api/projects/${projectId}/entries`, {
      body: input,
      headers: { 'idempotency-key': key },
    });
    return { id: Number(res.body.id) };
  }
}
