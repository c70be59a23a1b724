// The fleet e2e's one-line reason for a failed play (the run's summary; CI keeps only the
// tail of a long log): it must name the host, the task and our install's failed step
// with its error, in the two shapes ansible prints a result.
import { describe, expect, it } from 'vitest';
import { parseDoctorTable, playFailure } from './e2e/fleet.js';

const installJson = JSON.stringify({
  schemaVersion: 1,
  ok: false,
  steps: [
    { id: 'preflight', status: 'ok', durationMs: 1 },
    { id: 'health', status: 'failed', durationMs: 120_000, error: 'the gateway did not answer /healthz within 120 s', hint: 'read `service-deploy gateway logs`' },
    { id: 'channel', status: 'skipped', durationMs: 0, reason: 'the channel endpoint is configured only by the catalog deploy' },
  ],
}, null, 2);
const TASK = 'TASK [service_deploy : Run service-deploy install --json (with --check in check mode)] ***';

describe('playFailure', () => {
  it('one-line result: names the host, the task and the failed step with its error', () => {
    const result = { changed: true, rc: 1, stdout: installJson, stdout_lines: installJson.split('\n') };
    const out = `${TASK}\nok: [fleet-2]\nfatal: [fleet-1]: FAILED! => ${JSON.stringify(result)}\n\nPLAY RECAP ***\n`;
    const why = playFailure({ stdout: out, stderr: '', exitCode: 2 });
    expect(why).toMatch(/^fleet-1: service_deploy : Run service-deploy install --json .* failed; failed step health: the gateway did not answer \/healthz within 120 s/);
    expect(why).not.toContain('fleet-2');
    expect(why.length).toBeLessThanOrEqual(380);
  });

  it('indented result (stdout_lines one per line), and a failure without our JSON', () => {
    const lines = installJson.split('\n').map((l) => `        ${JSON.stringify(l)}`).join(',\n');
    const out = `${TASK}\nfatal: [fleet-3]: FAILED! => {\n    "changed": true,\n    "stdout_lines": [\n${lines}\n    ]\n}\n\nTASK [x] ***\nfatal: [fleet-1]: FAILED! => {"changed": false, "msg": "Failed to connect to the host via ssh"}\n\nPLAY RECAP`;
    const why = playFailure({ stdout: out, stderr: '', exitCode: 4 });
    expect(why).toMatch(/^fleet-3: .*failed step health: the gateway did not answer/);
    expect(why).toMatch(/fleet-1: x failed: Failed to connect to the host via ssh/);
  });

  it('a command that did not start: its stderr', () => {
    const out = `${TASK}\nfatal: [fleet-1]: FAILED! => {"changed": false, "msg": "non-zero return code", "rc": 127, "stderr": "/usr/local/bin/service-deploy: error while loading shared libraries: libatomic.so.1: cannot open shared object file", "stdout": ""}\n`;
    expect(playFailure({ stdout: out, stderr: '', exitCode: 2 })).toMatch(/fleet-1: .* failed: \/usr\/local\/bin\/service-deploy: error while loading shared libraries: libatomic\.so\.1/);
  });

  it('no failed host: the exit code and the last line of stderr', () => {
    expect(playFailure({ stdout: 'PLAY RECAP', stderr: 'ERROR! the playbook: site.yml could not be found\n', exitCode: 1 })).toBe('ansible-playbook exit 1: ERROR! the playbook: site.yml could not be found');
  });
});

describe('parseDoctorTable', () => {
  it("reads doctor.yml's rows (release, the components' versions, result, failed checks, fixes) from the debug task's output, not its header", () => {
    const out = `TASK [Print one row per server] ***
ok: [localhost] => {
    "msg": [
        "host    | release | openclaw                | node                   | qmd   | lossless-claw | result       | failed checks            | fixes",
        "fleet-1 | 0.1.0   | 2026.9.6                | 26.12.1                | 2.8.3 | 0.15.1        | healthy      | -                        | -",
        "fleet-2 | 0.1.0   | 2026.9.5 (pin 2026.9.6) | 24.21.0 (pin 26.12.1)  | 2.8.3 | -             | FAILING      | agent-runtime, providers | doctor --fix: providers; by hand: agent-runtime",
        "fleet-3 | 0.1.0   | -                       | -                      | -     | -             | NOT DEPLOYED | -                        | service-deploy install"
    ]
}
`;
    expect(parseDoctorTable(out)).toEqual([
      { host: 'fleet-1', release: '0.1.0', openclaw: '2026.9.6', node: '26.12.1', qmd: '2.8.3', losslessClaw: '0.15.1', result: 'healthy', failed: '-', fixes: '-' },
      { host: 'fleet-2', release: '0.1.0', openclaw: '2026.9.5 (pin 2026.9.6)', node: '24.21.0 (pin 26.12.1)', qmd: '2.8.3', losslessClaw: '-', result: 'FAILING', failed: 'agent-runtime, providers', fixes: 'doctor --fix: providers; by hand: agent-runtime' },
      { host: 'fleet-3', release: '0.1.0', openclaw: '-', node: '-', qmd: '-', losslessClaw: '-', result: 'NOT DEPLOYED', failed: '-', fixes: 'service-deploy install' },
    ]);
  });

  it('skips the rows of a table of another shape (the six columns before the versions of Node, QMD and lossless-claw)', () => {
    const out = `    "msg": [
        "host    | release | openclaw | result  | failed checks | fixes",
        "fleet-1 | 0.1.0   | 2026.9.6 | healthy | -             | -"
    ]`;
    expect(parseDoctorTable(out)).toEqual([]);
  });
});
