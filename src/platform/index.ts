/** The platform API client's public surface. */
export { createPlatformClient, platformClientOptionsFromConfig, type PlatformClientOptions } from './client.ts';
export { classifyResponse, classifyTransportError, DOCUMENTED_CODES, isRetryable, normaliseCode, PlatformError } from './errors.ts';
export { paginate, type PaginateOptions } from './paginate.ts';
export { budgetKeyPrefix, createRequestBudget, type RequestBudget, type RequestBudgetOptions } from './request-budget.ts';
export { parseRetryAfter, retryDelay } from './retry.ts';
export { parseLoginUrl } from './login-url.ts';
export type { Page, PlatformClient, RecordProblem, RequestEvent } from './types.ts';
