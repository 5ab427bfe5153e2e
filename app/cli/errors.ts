// The kernel's class, so that a plugin's bootstrap section and the CLI throw the same error.
export { BootstrapError as AdminError } from '../../core/errors.ts';
