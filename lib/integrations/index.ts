/**
 * The integration library (package export `labdata/integrations`): what plugins that talk to
 * external systems share — a vendor HTTP client, the outbound URL policy, provisioning steps run
 * on the kernel's job queue, and the checks on stored connection settings. It imports only the
 * kernel's public entry point. See README.md here for provisioning.
 */
/** Vendor HTTP client, its error, the outbound URL policy and the link/verify helpers built on them. */
export {
  askVendor, vendorStep, vendorEndpoint, vendorUrlProblem, linkExisting, verifyExisting, VendorClient, VendorError,
  type OutboundPolicy, type VendorClientOptions, type VendorRequest, type VendorResponse, type VendorIntegration, type VendorEndpoint, type ExistingLink,
} from './vendor-http.ts';
/** Provisioning: per-kernel service (`provisioning(ctx.services)`), step types, the retry-initialization write, its table. */
export {
  provisioning, provisioningMigrations, StepFailedError, retryInitializationWrite, STEP_STATUSES, type ProvisioningService, type ProvisioningStep, type StepContext,
  type StepExecutor, type StepResult, type StepStatus, type ExecutorOptions, type ProvisionedKind, type RecordScope, type AddStepInput,
} from './provisioning.ts';
/** Outbound connections to user-given URLs: address classes, checked on the resolved addresses, and a checking `lookup`. */
export { addressProblem, hostProblem, checkedLookup, urlHost, RefusedAddressError, type AddressPolicy } from './outbound.ts';
/** Public and secret connection settings (allow-list). */
export { splitSecretFields, publicFields } from './secret-fields.ts';
/** Which directories may be a storage or Git root. */
export { storageRootProblem } from './storage-roots.ts';
