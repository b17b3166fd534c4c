import { createUserPayloadSchema, PROVISION_ATTEMPTS, PROVISION_JOBS } from '../src/provisioning/apply/actions.ts';
import { createUserAction } from '../src/provisioning/apply/create-user.ts';
import { defineJob } from '../src/queue/define-job.ts';
import { PROVISION_QUEUE } from '../src/queue/names.ts';

/** A joiner's account; adopts one already there (EMAIL_IN_USE_ORG_CONNECTED). The engine is src/provisioning/apply/create-user.ts. */
export const createUser = defineJob({
  name: PROVISION_JOBS.createUser,
  enqueuedByName: true,
  queue: PROVISION_QUEUE,
  payload: createUserPayloadSchema,
  attempts: PROVISION_ATTEMPTS,
  run: (p, ctx) => createUserAction(ctx, p),
});
