import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRetentionMs, resolveRetention, RETENTION_DEFAULTS, storedRetention } from './retention.ts';

describe('retention periods', () => {
  it('accepts durations from 1s to 10 years', () => {
    for (const [raw, ms] of [
      ['1s', 1_000],
      ['7d', 604_800_000],
      [1_500, 1_500],
      ['3650d', 3650 * 86_400_000],
    ] as const)
      assert.equal(parseRetentionMs(raw), ms);
    for (const raw of ['0s', '999ms', 0, 999, '3651d', 'soon', '7 d', -1, 1.5, null, {}])
      assert.equal(parseRetentionMs(raw), null, JSON.stringify(raw));
  });

  it("resolves a tenant's own periods over the defaults, ignoring what is not valid", () => {
    assert.deepEqual(resolveRetention(RETENTION_DEFAULTS, undefined), RETENTION_DEFAULTS);
    assert.deepEqual(
      resolveRetention(RETENTION_DEFAULTS, { retention: { succeeded: 60_000, archived: 0, scheduled: 5_000 } }),
      { ...RETENTION_DEFAULTS, succeeded: 60_000 },
    );
    assert.deepEqual(storedRetention({ retention: ['7d'] }), {});
    assert.deepEqual(storedRetention({ retention: { canceled: 2_000 } }), { canceled: 2_000 });
  });
});
