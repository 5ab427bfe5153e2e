/**
 * A counting semaphore: at most `limit` holders at once, the rest wait in arrival order.
 * Bounds how many job handlers run at once (all jobs of a process, and per vendor group).
 */
export class Limiter {
  readonly limit: number;
  #running = 0;
  #waiting: (() => void)[] = [];

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`a concurrency limit must be a positive integer, got ${limit}`);
    this.limit = limit;
  }

  get running(): number {
    return this.#running;
  }

  async acquire(): Promise<void> {
    if (this.#running < this.limit) {
      this.#running++;
      return;
    }
    // The releasing holder hands its slot over: #running stays the same.
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#running--;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await fn();
    } finally {
      this.release();
    }
  }
}
