/**
 * The end of start-up (every plugin's `setup` done), for registries kept outside the kernel
 * (e.g. the record library's) to freeze at the same moment as the kernel's extension points.
 */
export class StartupSignal {
  #ended = false;
  #hooks: (() => void)[] = [];

  /** True once every plugin's setup has run. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Runs `hook` when start-up ends (at once if it already has). */
  onEnd(hook: () => void): void {
    if (this.#ended) hook();
    else this.#hooks.push(hook);
  }

  /** Called by the kernel once, after the last plugin's setup. */
  end(): void {
    this.#ended = true;
    for (const hook of this.#hooks.splice(0)) hook();
  }
}
