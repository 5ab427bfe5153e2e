/**
 * The end of start-up: when every enabled plugin's `register` has run. From then on the kernel's
 * registries (operations, event types, activity references, counters, job definitions) are
 * frozen: a registration after it would reach some requests and not others, so it throws.
 * Libraries freeze their own registries with `onEnded`.
 */
export class Startup {
  #ended = false;
  #hooks: (() => void)[] = [];

  /** True once start-up has ended. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Runs `hook` when start-up ends (at once if it has ended): where a library freezes its registries. */
  onEnded(hook: () => void): void {
    if (this.#ended) hook();
    else this.#hooks.push(hook);
  }

  /** Throws once start-up has ended; `what` names the registration (`job definition x.y`). */
  assertOpen(what: string): void {
    if (this.#ended) throw new Error(`${what} registered after start-up ended: register it in the plugin's setup or register`);
  }

  /** Called by the kernel when the last plugin's register returns. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const hook of this.#hooks.splice(0)) hook();
  }
}
