import type { SimulatorFaults } from './faults.ts';
import type { SimulatorState } from './state.ts';

export interface ResultChanges {
  added: string[];
  removed: string[];
}

/** What routes share with the server: the data, the current faults and their counters. */
export interface Runtime {
  state: SimulatorState;
  faults: SimulatorFaults;
  /** The port the server listens on (the foreign next-link fault names it). */
  port: number;
  /** Results list pages served since the faults were last set (drives drift). */
  resultsPagesServed: number;
  /** Results the removal fault deleted since the faults were last set. */
  resultsRemoved: number;
  /** The ids of results the arrival and removal faults added and deleted since the faults were last set, in order. */
  resultChanges: ResultChanges;
  /**
   * Every organisation's data on this platform, this one's included: e-mails are unique
   * across the whole platform, and an account in two organisations cannot be deleted.
   */
  platform: readonly SimulatorState[];
}
