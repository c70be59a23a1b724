import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../helpers/binary.js';
import { budget } from '../helpers/budget.js';
import { jsonOutput } from '../helpers/json-schemas.js';
import { tempDir } from '../helpers/tmp.js';
import { DOCTOR_TABLE_HEAD, EXAMPLE, parseDoctorTable } from '../e2e/fleet.js';

// examples/ansible's doctor.yml prints one table of the fleet (doctor-table.j2): release,
// the components' versions, result, failed checks, fixes. The fleet e2e reads it from real
// servers; here it is made from answers of every kind a server gives: a healthy one, one
// left behind its pins, one with nothing deployed, one of an earlier service-deploy (its
// doctor has no versions: the role asks its status --json), one whose doctor failed. The
// template through python3's jinja2 as Ansible sets it up (strict undefined values that
// chain, trim_blocks, from_json), and, where Ansible is installed, the whole doctor.yml
// against stand-in binaries on this machine (local connections).

const ROLE = path.join(EXAMPLE, 'roles', 'service_deploy');
const PINS = JSON.parse(fs.readFileSync(path.join(REPO, 'templates/components.json'), 'utf8'));
const PINNED = { node: PINS.node.version as string, openclaw: PINS.openclaw.version as string, qmd: PINS.qmd.version as string, 'lossless-claw': PINS.losslessClaw.version as string };
const RELEASE: string = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')).version;
type Name = keyof typeof PINNED;

function versions(installed: Partial<Record<Name, string | null>> = {}) {
  const components = Object.fromEntries(
    (Object.keys(PINNED) as Name[]).map((name) => {
      const have = name in installed ? installed[name]! : PINNED[name];
      return [name, { installed: have, pinned: PINNED[name], behind: have !== PINNED[name] }];
    }),
  );
  return { release: RELEASE, components };
}

const check = (id: string, status: string, fixable = false) => ({ id, title: id, status, message: status === 'pass' ? 'ok' : `${id} is wrong`, ...(status === 'fail' ? { fix: 'fix it' } : {}), fixable, durationMs: 1 });
const summary = (checks: Array<{ status: string }>) => Object.fromEntries(['pass', 'warn', 'fail', 'skip', 'crashed'].map((s) => [s, checks.filter((c) => c.status === s).length]));

/** A doctor --json document as this binary prints it: checked against the published schema. */
function doctorDoc(checks: ReturnType<typeof check>[], deployed: boolean, installed: Partial<Record<Name, string | null>> = {}): string {
  const ok = deployed && !checks.some((c) => c.status === 'fail');
  const error = ok ? {} : { error: deployed ? { code: 'checks-failed', message: 'checks failed', hint: null, exitCode: 1 } : { code: 'not-deployed', message: 'Nothing deployed here', hint: null, exitCode: 1 } };
  const text = JSON.stringify({ schemaVersion: 1, ok, summary: summary(checks), checks, deployed, versions: versions(installed), ...error });
  jsonOutput('doctor', text);
  return text;
}

const LEFT_BEHIND = { openclaw: '2026.9.5', qmd: '2.8.2', 'lossless-claw': null };
/** An earlier service-deploy's doctor (no versions) and status --json (schema version 2, checked). */
const EARLIER_DOCTOR = JSON.stringify({ schemaVersion: 1, ok: true, summary: summary([check('os', 'pass')]), checks: [check('os', 'pass')], deployed: true });
const EARLIER_STATUS = JSON.stringify(
  jsonOutput(
    'status',
    JSON.stringify({
      schemaVersion: 2,
      ok: true,
      binary: { version: '0.0.9', node: '26.12.1', arch: 'x64' },
      deployed: true,
      channel: false,
      components: { node: { installed: '24.21.0', pinned: '24.21.0' }, openclaw: { installed: '2026.9.5', pinned: '2026.9.5', previous: '2026.9.4' }, qmd: { installed: '2.8.2', pinned: '2.8.2' }, 'lossless-claw': { pinned: '0.15.0' } },
      services: { gateway: true, health: true, mesh: 'running', serving: true },
    }),
  ),
);

/** What each server answers: doctor --json (its exit code), and status --json where the role asks it. */
const SERVERS: Record<string, { rc: number; doctor: string; status?: string }> = {
  'fleet-1': { rc: 0, doctor: doctorDoc([check('os', 'pass'), check('agent-runtime', 'pass')], true) },
  'fleet-2': { rc: 1, doctor: doctorDoc([check('agent-runtime', 'fail'), check('plugins', 'fail'), check('providers', 'fail', true), check('backups', 'skip')], true, LEFT_BEHIND) },
  'fleet-3': { rc: 1, doctor: doctorDoc([], false, { node: null, openclaw: null, qmd: null, 'lossless-claw': null }) },
  'fleet-4': { rc: 0, doctor: EARLIER_DOCTOR, status: EARLIER_STATUS },
  // Its doctor refused to run (exit 2, nothing on stdout): the role's task fails.
  'fleet-5': { rc: 2, doctor: '' },
};

/** What doctor.yml registers on each server, as Ansible's command module gives it. */
const HOSTVARS: Record<string, Record<string, unknown>> = Object.fromEntries(
  Object.entries(SERVERS).map(([host, s]) => [
    host,
    {
      service_deploy_doctor: { rc: s.rc, stdout: s.doctor, ...(s.rc > 1 ? { failed: true, msg: 'non-zero return code' } : {}) },
      ...(s.status ? { service_deploy_status: { rc: 0, stdout: s.status } } : { service_deploy_status: { skipped: true, changed: false } }),
    },
  ]),
);

const EXPECTED = [
  { host: 'fleet-1', release: RELEASE, openclaw: PINNED.openclaw, node: PINNED.node, qmd: PINNED.qmd, losslessClaw: PINNED['lossless-claw'], result: 'healthy', failed: '-', fixes: '-' },
  {
    host: 'fleet-2',
    release: RELEASE,
    openclaw: `2026.9.5 (pin ${PINNED.openclaw})`,
    node: PINNED.node,
    qmd: `2.8.2 (pin ${PINNED.qmd})`,
    losslessClaw: '-',
    result: 'FAILING',
    failed: 'agent-runtime, plugins, providers',
    fixes: 'doctor --fix: providers; by hand: agent-runtime, plugins',
  },
  { host: 'fleet-3', release: RELEASE, openclaw: '-', node: '-', qmd: '-', losslessClaw: '-', result: 'NOT DEPLOYED', failed: '-', fixes: 'service-deploy install' },
  { host: 'fleet-4', release: '0.0.9', openclaw: '2026.9.5', node: '24.21.0', qmd: '2.8.2', losslessClaw: '-', result: 'healthy', failed: '-', fixes: '-' },
  { host: 'fleet-5', release: '?', openclaw: '?', node: '?', qmd: '?', losslessClaw: '?', result: 'NO ANSWER', failed: 'non-zero return code', fixes: '-' },
];

/** The template through jinja2 set up as Ansible's template lookup does; printed as the debug task prints a list. */
const JINJA = `
import json, sys
from jinja2 import Environment, FileSystemLoader, StrictUndefined
class AnsibleUndefined(StrictUndefined):
    # Ansible's: an undefined value's attributes are undefined too (a.b.c | default(x)), anything else fails.
    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        return self
    def __getitem__(self, key):
        return self
env = Environment(loader=FileSystemLoader(sys.argv[1]), undefined=AnsibleUndefined, trim_blocks=True)
env.filters['from_json'] = json.loads
facts = json.load(sys.stdin)
lines = env.get_template('doctor-table.j2').render(groups=facts['groups'], hostvars=facts['hostvars']).splitlines()
print('    "msg": [\\n' + ',\\n'.join('        ' + json.dumps(l) for l in lines) + '\\n    ]')
`;

async function withJinja(): Promise<string> {
  const run = await execa('/usr/bin/python3', ['-c', JINJA, path.join(ROLE, 'templates')], { input: JSON.stringify({ groups: { customers: Object.keys(HOSTVARS) }, hostvars: HOSTVARS }), extendEnv: false, env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' }, reject: false });
  expect(run.exitCode, run.stderr).toBe(0);
  return run.stdout;
}

/**
 * doctor.yml itself: each server a local connection whose service-deploy is a stand-in
 * answering as SERVERS says (and noting what it was asked), the table printed by the
 * report play on the control node.
 */
async function withAnsible(): Promise<string> {
  const dir = tempDir('sd-doctor-yml-');
  const hosts: Record<string, Record<string, unknown>> = {};
  for (const [host, s] of Object.entries(SERVERS)) {
    const answers = path.join(dir, host);
    fs.mkdirSync(answers);
    fs.writeFileSync(path.join(answers, 'doctor.json'), s.doctor);
    if (s.status) fs.writeFileSync(path.join(answers, 'status.json'), s.status);
    const bin = path.join(answers, 'service-deploy');
    fs.writeFileSync(bin, `#!/bin/sh\necho "$*" >> ${answers}/asked\ncase "$1" in\n  doctor) cat ${answers}/doctor.json; exit ${s.rc} ;;\n  status) cat ${answers}/status.json; exit 0 ;;\nesac\nexit 2\n`, { mode: 0o755 });
    hosts[host] = { ansible_connection: 'local', ansible_become: false, ansible_python_interpreter: '/usr/bin/python3', service_deploy_binary_path: bin };
  }
  fs.writeFileSync(path.join(dir, 'inventory.yml'), JSON.stringify({ customers: { hosts } }));
  const run = await execa('ansible-playbook', ['-i', path.join(dir, 'inventory.yml'), path.join(EXAMPLE, 'doctor.yml')], {
    cwd: dir,
    extendEnv: false,
    env: { PATH: process.env.PATH!, HOME: dir, LANG: 'C.UTF-8', ANSIBLE_NOCOLOR: '1', ANSIBLE_LOCALHOST_WARNING: 'false', ANSIBLE_LOCAL_TEMP: path.join(dir, 'tmp'), ANSIBLE_PYTHON_INTERPRETER: '/usr/bin/python3' },
    reject: false,
    timeout: budget(300_000),
  });
  // fleet-5's failed doctor fails its host (exit 2); the report play runs all the same.
  expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(2);
  expect(run.stdout).toMatch(/^fleet-5\s+: .*failed=1/m);
  // status --json only where doctor has no versions (the earlier service-deploy).
  const asked = Object.fromEntries(Object.keys(SERVERS).map((h) => [h, fs.readFileSync(path.join(dir, h, 'asked'), 'utf8').trim().split('\n')]));
  expect(asked).toEqual({ 'fleet-1': ['doctor --json'], 'fleet-2': ['doctor --json'], 'fleet-3': ['doctor --json'], 'fleet-4': ['doctor --json', 'status --json'], 'fleet-5': ['doctor --json'] });
  fs.rmSync(dir, { recursive: true, force: true });
  return run.stdout;
}

const ansible = ['/usr/bin', '/usr/local/bin'].some((d) => fs.existsSync(path.join(d, 'ansible-playbook')));
const renderers: Array<[string, () => Promise<string>, boolean]> = [
  ['jinja2 as Ansible sets it up', withJinja, true],
  ['doctor.yml run by Ansible', withAnsible, ansible],
];

describe.each(renderers)('doctor-table.j2 (%s)', (_name, render, available) => {
  it.skipIf(!available)("one row per server: the release and each component's version (the pin beside one left behind, - when missing), result, failed checks, fixes", async () => {
    const out = await render();
    const header = out.split('\n').find((l) => l.includes('"host '));
    expect(header?.trim().replace(/^"|",?$/g, '').split(' | ').map((c) => c.trim())).toEqual(DOCTOR_TABLE_HEAD);
    expect(parseDoctorTable(out)).toEqual(EXPECTED);
    // The columns line up: every row's separators where the header's are.
    const lines = out.split('\n').filter((l) => /^\s*"(host|fleet-)/.test(l)).map((l) => l.trim());
    const bars = (l: string) => [...l.matchAll(/ \| /g)].map((m) => m.index);
    for (const line of lines.slice(1)) expect(bars(line), line).toEqual(bars(lines[0]!));
  });
});
