/**
 * The end of start-up (every plugin's `setup` and `register` done), for registries kept outside
 * the kernel (e.g. the record library's) to freeze: a later registration is a bug.
 */
export class StartupSignal {
  #ended = false;
  #hooks: (() => void)[] = [];

  /** True once every plugin's setup and register have run. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Runs `hook` when start-up ends (at once if it already has). */
  onEnd(hook: () => void): void {
    if (this.#ended) hook();
    else this.#hooks.push(hook);
  }

  /** Called by the kernel once, after the last plugin's register. */
  end(): void {
    this.#ended = true;
    for (const hook of this.#hooks.splice(0)) hook();
  }
}
