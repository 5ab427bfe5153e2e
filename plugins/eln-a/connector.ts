/**
 * The ELN platform A connector: one small interface, and its implementation over the vendor's
 * REST API (README, "Vendor API") through the kernel's vendor HTTP client.
 */
import { VendorClient, type VendorEndpoint } from '../../lib/integrations/index.ts';

export interface ElnATemplateInfo {
  id: string;
  /** Names of the fields an entry made from this template accepts. */
  fields: string[];
}

export interface ElnAConnector {
  folderExists(folderId: string): Promise<boolean>;
  /** The template, or null when the vendor does not know it. */
  template(templateId: string): Promise<ElnATemplateInfo | null>;
  /** `key` makes the call idempotent: repeating it returns the folder the first call created. */
  createFolder(input: { parentId: string; name: string }, key: string): Promise<{ id: string }>;
  createEntry(input: { folderId: string; name: string; templateId?: string; fields?: Record<string, unknown> }, key: string): Promise<{ id: string }>;
}

export class HttpElnAConnector implements ElnAConnector {
  readonly #client: VendorClient;

  constructor(endpoint: VendorEndpoint) {
    this.#client = new VendorClient({ vendor: 'ELN A', baseUrl: endpoint.baseUrl, timeoutMs: endpoint.timeoutMs, headers: { authorization: `Bearer ${endpoint.secret}` } });
  }

  async folderExists(folderId: string): Promise<boolean> {
    const res = await this.#client.request('GET', `api/folders/${encodeURIComponent(folderId)}`, { accept: [404] });
    return res.status === 200;
  }

  async template(templateId: string): Promise<ElnATemplateInfo | null> {
    const res = await this.#client.request<{ id: string; fields?: unknown }>('GET', `api/templates/${encodeURIComponent(templateId)}`, { accept: [404] });
    if (res.status === 404) return null;
    const fields = Array.isArray(res.body.fields) ? res.body.fields.filter((f): f is string => typeof f === 'string') : [];
    return { id: String(res.body.id), fields };
  }

  async createFolder(input: { parentId: string; name: string }, key: string): Promise<{ id: string }> {
    const res = await this.#client.request<{ id: string }>('POST', 'api/folders', { body: input, headers: { 'idempotency-key': key } });
    return { id: String(res.body.id) };
  }

  async createEntry(
    input: { folderId: string; name: string; templateId?: string; fields?: Record<string, unknown> },
    key: string,
  ): Promise<{ id: string }> {
    const res = await this.#client.request<{ id: string }>('POST', 'api/entries', { body: input, headers: { 'idempotency-key': key } });
    return { id: String(res.body.id) };
  }
}
