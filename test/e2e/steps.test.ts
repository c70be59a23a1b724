import { describe, expect, it } from 'vitest';
import { FAILURE_DETAIL_LINES, failureDetail } from './steps.js';

describe('failureDetail (what the e2e summary repeats of a failure, for CI logs that keep only the tail)', () => {
  it('picks the gateway journal and status, not the install log before it nor nginx after it', () => {
    const explained = [
      'Stopped at: Health check: the gateway is not running after 159 s',
      '--- diagnostics (secrets masked)',
      'install.log line',
      '--- gateway journal',
      'Nov 28 node[123]: FATAL out of memory',
      '',
      'openclaw-gateway.service - OpenClaw gateway',
      '--- nginx',
      'nginx error line',
    ].join('\n');
    expect(failureDetail(explained)).toEqual(['Nov 28 node[123]: FATAL out of memory', 'openclaw-gateway.service - OpenClaw gateway']);
  });

  it('without a gateway section, the last lines; never more than the bound', () => {
    const explained = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n');
    const detail = failureDetail(explained)!;
    expect(detail).toHaveLength(FAILURE_DETAIL_LINES);
    expect(detail.at(-1)).toBe('line 99');
  });

  it('an empty explanation gives nothing to print', () => {
    expect(failureDetail('\n\n')).toBeUndefined();
  });
});
