import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { gatewayServiceStep } from '../../src/steps/gateway-service.js';
import { sandboxContext, standIn } from '../helpers/install-ctx.js';
import { tempDir } from '../helpers/tmp.js';

const LINGER_ONLY = { linger: true, cacheDir: false, unit: false, reload: false, enable: false, restart: false, start: false };

/** loginctl answering as logind does: `refusal` on stderr and exit 1, or linger enabled. */
function standIns(refusal?: string): string {
  const bin = standIn(path.join(tempDir('sd-linger-'), 'bin'), 'loginctl', refusal ? `#!/bin/sh\necho '${refusal}' >&2\nexit 1\n` : '#!/bin/sh\nexit 0\n');
  standIn(bin, 'systemctl', '#!/bin/sh\n[ "$2" = is-system-running ] && echo running\nexit 0\n');
  return bin;
}

describe('the gateway step enables linger', () => {
  it('goes on when logind enables it', async () => {
    await expect(gatewayServiceStep.apply(sandboxContext({ binDir: standIns() }), { changes: [], data: LINGER_ONLY })).resolves.toBeUndefined();
  });

  it("says what to do when logind cannot place the caller (systemd 257: 'Protocol driver not attached')", async () => {
    const apply = gatewayServiceStep.apply(sandboxContext({ binDir: standIns('Could not enable linger: Protocol driver not attached') }), { changes: [], data: LINGER_ONLY });
    await expect(apply).rejects.toThrow(/loginctl enable-linger root failed: Could not enable linger: Protocol driver not attached/);
    await expect(apply).rejects.toMatchObject({ hint: expect.stringMatching(/login session \(ssh, sudo\), a service or cloud-init/) });
  });

  it('names logind otherwise', async () => {
    const apply = gatewayServiceStep.apply(sandboxContext({ binDir: standIns('Could not enable linger: Access denied') }), { changes: [], data: LINGER_ONLY });
    await expect(apply).rejects.toMatchObject({ hint: expect.stringMatching(/systemd-logind runs/) });
  });
});
