import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PINNED_NODE, REPO, cleanEnv } from './helpers/binary.js';
import { budget, waitUntil } from './helpers/budget.js';

// `npm run demo -- --keep` (issue 30.11): the demo's sandbox stays, with its stand-ins
// running, until the demo is stopped; the lines it prints work from another shell as
// printed; stopping it removes the sandbox.
describe('npm run demo -- --keep', () => {
  it('keeps a working sandbox with its stand-ins until stopped, then removes it', async () => {
    const demo = execa(PINNED_NODE, ['scripts/demo.mjs', '--keep'], { cwd: REPO, env: cleanEnv(), extendEnv: false, reject: false, all: true });
    let output = '';
    demo.all!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await waitUntil('the demo to print how to use the kept sandbox', () => output.includes('In another terminal'), { budgetMs: 300_000, lastSeen: () => output.slice(-2000) });
      // Its commands, as a shell would read them.
      expect(output).toContain("$ service-deploy install --customer-name 'Demo Dental' --non-interactive");
      const lines = output.slice(output.indexOf('In another terminal')).split('\n').filter((l) => l.startsWith('  /'));
      expect(lines.map((l) => l.trim().split(' ').slice(1).join(' '))).toEqual(['status', 'doctor', 'install --channel --non-interactive', 'channel show', 'install --model demo-model-3 --non-interactive --diff']);
      const wrapper = lines[0]!.trim().split(' ')[0]!;
      const root = /Its files: (\S+)/.exec(output)![1]!;

      // From "another terminal": a plain environment, a SERVICE_* of its own that must not leak in.
      const shell = { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/root', SERVICE_API_KEY: 'pkt_not_this_one_000' };
      const status = await execa('sh', ['-c', lines[0]!.trim()], { env: shell, extendEnv: false, reject: false });
      expect(status.exitCode, status.stderr).toBe(0);
      expect(status.stdout).toContain('customer Demo Dental  model demo-model-2');
      expect(status.stdout).toMatch(/gateway active, \/healthz ok/);
      const doctor = await execa(wrapper, ['doctor'], { env: shell, extendEnv: false, reject: false, timeout: budget(120_000) });
      expect(doctor.exitCode, doctor.stdout).toBe(0);
      const plan = await execa('sh', ['-c', lines[4]!.trim()], { env: shell, extendEnv: false, reject: false, timeout: budget(120_000) });
      expect(plan.exitCode, plan.stderr).toBe(0);
      expect(plan.stdout).toContain('demo-model-3');

      demo.kill('SIGTERM');
      const ended = await demo;
      expect(ended.exitCode, output.slice(-2000)).toBe(0);
      expect(output).toContain('SIGTERM: stopping the stand-ins and removing the sandbox');
      expect(fs.existsSync(root)).toBe(false);
      expect(fs.existsSync(path.dirname(wrapper))).toBe(false);
    } finally {
      // demo.mjs passes it on: the demo stops its stand-ins and removes its sandbox.
      if (demo.exitCode === null && demo.signalCode === null) demo.kill('SIGTERM');
    }
  }, 600_000);
});
