import { describe, expect, it } from 'vitest';
import { approveCommand, refusedReason } from '../src/commands/render/refusal-line.ts';
import { wrapLine } from '../src/lib/text-width.ts';
import { disableRefusal, seatRefusal } from '../src/provisioning/plan/refusal.ts';
import { confirmationProblem } from '../src/provisioning/pipeline/confirm.ts';
import { FORCE_ASK } from '../src/provisioning/pipeline/guards.ts';
import { expectNoApplyingCommand } from './helpers/no-applying-command.ts';

/** The line said last when a plan is refused: short, what to do next, and whole in --json. */
describe('refusedReason', () => {
  const maxDisable = { reason: 'max-disable' as const, message: 'The plan would disable 277 employees, more than the limit of 27; nothing was enqueued. Review it first with --dry-run.' };

  it('a held plan ends with the command that approves it, in the form `trainsync held --approve ID --confirm N`', () => {
    const reason = refusedReason(maxDisable, { disables: 277, limit: 27, heldPlanId: 12, dryRun: false, json: false });
    expect(reason.split('\n').at(-1)).toBe(`  approve plan #12: ${approveCommand(12)}`);
    expect(reason.split('\n')[0]).toMatch(/Held for review; N = 277\.$/);
    // The count is the operator's to type: the command never carries it ready to paste.
    expect(approveCommand(12)).toBe('trainsync held --approve 12 --confirm N');
    // The last line fits an 80-column terminal with room to spare: never wrapped there.
    expect(wrapLine(reason.split('\n').at(-1)!, 62)).toHaveLength(1);
  });

  it('a dry run past the limit holds nothing and says how to go on; seats and feed errors say theirs', () => {
    expect(refusedReason(maxDisable, { disables: 277, limit: 27, dryRun: true, json: false })).toBe('refused (dry run, nothing held): 277 disables, over the limit of 27.\n  review the plan above; to apply it anyway: --force with --confirm N (N = 277, the people who lose access)');
    expect(refusedReason({ reason: 'seats', message: 'x' }, { disables: 0, limit: 5, dryRun: false, json: false })).toMatch(/\n {2}free seats on the platform, or rerun with --force$/);
    expect(refusedReason({ reason: 'feed-errors', message: 'x' }, { disables: 0, limit: 5, dryRun: false, json: false })).toMatch(/the feed file cannot be read/);
  });

  it('with --json the whole message, and the approve command, are in the reason (stdout is the document)', () => {
    const reason = refusedReason(maxDisable, { disables: 277, limit: 27, heldPlanId: 3, dryRun: false, json: true });
    expect(reason).toBe(`refused, nothing was enqueued: ${maxDisable.message} Held as plan #3: approve it with \`trainsync held --approve 3 --confirm N\` (N: the 277 people who lose access), or in the console (Provisioning).`);
  });

  it('no refusal prints a command that applies a mass disable: not --force alone, not a raised --max-disable, not a count after --confirm', () => {
    const held = { disables: 277, limit: 27, heldPlanId: 12 };
    const refusal = disableRefusal(277, 3, undefined, 300);
    // The planner's and the guard's words (stored with a held plan, shown by `held` and the console).
    expect(refusal.message).not.toMatch(/rerun with --force[,.]|--max-disable \d/);
    expect(refusal.message).toMatch(/approve it with the number of people who lose access typed/);
    const messages = [
      refusal.message,
      seatRefusal({ 'create-user': 9, enable: 0, disable: 0, 'add-to-group': 0, 'remove-from-group': 0 }, 1)!.message,
      ...[true, false].flatMap((json) => [true, false].flatMap((dryRun) => [refusedReason(refusal, { ...held, dryRun, json }), refusedReason(refusal, { disables: 277, limit: 27, dryRun, json })])),
      refusedReason({ reason: 'confirm', message: confirmationProblem({ what: 'the plan', verb: 'apply', disables: 277 }, 3, FORCE_ASK)! }, { ...held, dryRun: false, json: false }),
      refusedReason({ reason: 'confirm', message: confirmationProblem({ what: 'the plan', verb: 'apply', disables: 277 }, undefined, FORCE_ASK)! }, { ...held, dryRun: false, json: true }),
      refusedReason({ reason: 'feed-shrink', message: 'the last HR snapshot lists 3 employees' }, { ...held, dryRun: false, json: false }),
      approveCommand(12),
    ];
    for (const message of messages) expectNoApplyingCommand(message);
    expect(refusedReason({ reason: 'confirm', message: 'x' }, { ...held, dryRun: false, json: false })).toBe('refused, nothing was enqueued: x');
    expect(refusedReason({ reason: 'empty-feed', message: 'y' }, { ...held, dryRun: false, json: false })).toBe('refused, nothing was planned: y');
  });
});
