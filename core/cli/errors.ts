/** An operator mistake; the CLI prints its message as the one-line reason and exits non-zero. */
export class AdminError extends Error {}
