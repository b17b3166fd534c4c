import { FlowProducer, type FlowJob, type JobsOptions, type Telemetry } from 'bullmq';
import type { RedisClient } from '../lib/redis-client.ts';
import type { Config } from '../config.ts';

/** Chains added per FlowProducer call: one Redis round trip each. */
const FLOW_BATCH = 200;

/** One job of a chain; `after` is the job that must finish before this one starts. */
export interface ChainLink {
  name: string;
  queue: string;
  data: unknown;
  jobId: string;
  options: JobsOptions;
  after?: ChainLink;
}

function toFlowJob(link: ChainLink): FlowJob {
  return {
    name: link.name,
    queueName: link.queue,
    data: link.data,
    opts: { ...link.options, jobId: link.jobId },
    ...(link.after ? { children: [toFlowJob(link.after)] } : {}),
  };
}

/**
 * Adds chains of jobs as BullMQ flows: in a flow a parent starts only when its child
 * has finished, so each chain's last link is its root and runs last. With `telemetry`,
 * each job carries the active trace (the plan that made it) to the worker that runs it.
 */
export async function addChains(config: Config, connection: RedisClient, chains: readonly ChainLink[], telemetry?: Telemetry): Promise<void> {
  if (chains.length === 0) return;
  // On the process's own connection: its errors and outages are reported where every other one's are.
  const flows = new FlowProducer({ connection, prefix: config.TRAINSYNC_QUEUE_PREFIX, ...(telemetry ? { telemetry } : {}) });
  try {
    for (let i = 0; i < chains.length; i += FLOW_BATCH) await flows.addBulk(chains.slice(i, i + FLOW_BATCH).map(toFlowJob));
  } finally {
    await flows.close();
  }
}
