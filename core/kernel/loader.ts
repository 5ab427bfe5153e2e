/** A start-up problem with the plugin list; its message is the one line the operator sees. */
export class PluginLoadError extends Error {}

