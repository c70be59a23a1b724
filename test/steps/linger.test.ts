import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { gatewayServiceStep } from '../../src/steps/gateway-service.js';
import { sandboxContext, standIn } from '../helpers/install-ctx.js';
import { tempDir } from '../helpers/tmp.js';

const LINGER_ONLY = { linger: true, cacheDir: false, unit: false, reload: false, enable: false, restart: false, start: false };

/** loginctl refuses `refusals` times (logind away, as on a loaded server), then enables linger. */
function standIns(refusals: number): { bin: string; tries: () => number } {
  const dir = tempDir('sd-linger-');
  const count = path.join(dir, 'tries');
  const bin = standIn(path.join(dir, 'bin'), 'loginctl', `#!/bin/sh
n=$(cat ${count} 2>/dev/null || echo 0); n=$((n + 1)); echo $n >${count}
if [ "$n" -le ${refusals} ]; then echo 'Could not enable linger: Protocol driver not attached' >&2; exit 1; fi
exit 0
`);
  standIn(bin, 'systemctl', '#!/bin/sh\n[ "$2" = is-system-running ] && echo running\nexit 0\n');
  return { bin, tries: () => Number(fs.readFileSync(count, 'utf8')) };
}

describe('the gateway step enables linger', () => {
  it('tries again while logind is briefly away, then goes on', async () => {
    const { bin, tries } = standIns(2);
    await gatewayServiceStep.apply(sandboxContext({ binDir: bin }), { changes: [], data: LINGER_ONLY });
    expect(tries()).toBe(3);
  });
});
