import { describe, expect, it } from 'vitest';
import { neededBy, needsProblems } from '../../src/pipeline/needs.js';
import { LOCKS, type Step } from '../../src/pipeline/step.js';
import { installSteps } from '../../src/steps/index.js';

const step = (id: string, needs: string[] = []): Step => ({ id, title: id, needs, check: async () => ({ changes: [] }), apply: async () => {} });

describe("the steps' needs (what a runner starting steps together must wait for)", () => {
  it('name only steps of the pipeline and locks, none needs a later step, no circle', () => {
    expect(needsProblems(installSteps())).toEqual([]);
  });

  it('the steps that install with apt take its lock; the gateway waits for everything it reads', () => {
    const steps = installSteps();
    const byId = new Map(steps.map((s) => [s.id, s]));
    expect(steps.filter((s) => s.needs?.includes(LOCKS.apt)).map((s) => s.id).sort()).toEqual(['browser', 'mesh-client', 'system-packages']);
    expect(byId.get('gateway-service')!.needs).toEqual(expect.arrayContaining(['runtime-config', 'runtime-secrets', 'channel-drop-in', 'agent-runtime']));
    // The manifest records what every step before it wrote.
    expect(byId.get('manifest')!.needs).toEqual(steps.slice(0, steps.findIndex((s) => s.id === 'manifest')).map((s) => s.id));
  });

  it('an unknown name, a later step and a circle are each named', () => {
    expect(needsProblems([step('a', ['nothing'])])).toEqual([`step a needs nothing, which is neither a step nor a lock (${Object.values(LOCKS).join(', ')})`]);
    expect(needsProblems([step('a', ['b']), step('b')])).toEqual(['step a needs b, which runs after it']);
    expect(needsProblems([step('a', ['a'])])).toEqual(['step a needs a, which runs as itself', 'the steps need each other in a circle: a -> a']);
    expect(needsProblems([step('a', ['c']), step('b', ['a']), step('c', ['b'])])).toEqual([
      'step a needs c, which runs after it',
      'the steps need each other in a circle: a -> c -> b -> a',
    ]);
    expect(needsProblems([step('apt')])).toEqual(['step apt has the name of a lock']);
  });

  it('a step that would start before a barrier listed before it has ended is named; waiting through another step counts', () => {
    const barrier = (id: string, needs: string[] = []): Step => ({ ...step(id, needs), barrier: true });
    expect(needsProblems([barrier('first'), step('b', ['first']), step('c', ['b']), step('d', ['apt'])])).toEqual([
      'step d does not wait for first, which every later step waits for (barrier)',
    ]);
    expect(needsProblems([barrier('first'), step('b', ['first', 'apt']), step('c', ['b'])])).toEqual([]);
    expect(needsProblems([step('early'), barrier('gate'), step('late', ['early'])])).toEqual(['step late does not wait for gate, which every later step waits for (barrier)']);
  });

  it('what runs programs of the system packages waits for them (a parallel install found node-runtime without libatomic1)', () => {
    const byId = new Map(installSteps().map((s) => [s.id, s]));
    // Node needs libatomic1; apt's https repositories ca-certificates; openssl, cron and nftables are run by these.
    for (const id of ['node-runtime', 'mesh-client', 'browser', 'channel-tls', 'channel-limits', 'guard', 'nginx-hardening']) {
      expect(neededBy(installSteps(), id).has('system-packages'), id).toBe(true);
      expect(byId.get(id)).toBeDefined();
    }
    for (const id of ['agent-runtime', 'memory', 'context-engine']) expect(neededBy(installSteps(), id).has('node-runtime'), id).toBe(true);
    // root's user manager runs once gateway-service has turned on linger (a parallel e2e install found memory-index before it).
    for (const id of installSteps().filter((s) => s.needs?.includes(LOCKS.userUnits) && s.id !== 'gateway-service').map((s) => s.id)) {
      expect(neededBy(installSteps(), id).has('gateway-service'), id).toBe(true);
    }
  });

  it("the gateway's first start does not wait for the browser package (OpenClaw looks for the browser when it launches it), nor for QMD's index or the guard", () => {
    const waits = neededBy(installSteps(), 'gateway-service');
    for (const id of ['browser', 'memory-index', 'memory-service', 'guard', 'mesh-client']) expect(waits.has(id), id).toBe(false);
    expect(installSteps().find((s) => s.id === 'manifest')!.needs).toContain('browser');
  });

  it('a background step (run at a lower CPU priority beside the others) is nothing the gateway\'s first health check waits for', () => {
    const background = installSteps().filter((s) => s.background).map((s) => s.id);
    expect(background.sort()).toEqual(['browser', 'memory']);
    const waits = neededBy(installSteps(), 'health');
    for (const id of background) expect(waits.has(id), id).toBe(false);
  });

  it('preflight and the package manager lock are barriers: nothing changes on a refused server or while another installer runs', () => {
    expect(installSteps().filter((s) => s.barrier).map((s) => s.id)).toEqual(['preflight', 'package-lock']);
  });
});
