import { describe, expect, it } from 'vitest';
import { FROM_OUTPUT, failureLine, placeholders, readQuickstart } from './e2e/quickstart.js';

// The e2e runs docs/quickstart.md's blocks (test/e2e/quickstart.ts); this catches a doc
// edit the e2e could not run (a new placeholder, a lost block) in `npm test` already.
describe('docs/quickstart.md, as the e2e reads it', () => {
  const doc = readQuickstart();
  const map = placeholders({ setup: { url: 'https://127.0.0.1:1' } as never, secrets: { apiKey: 'a', meshAuthKey: 'b', mcpToken: 'c' } });

  it('has the answers file and the one-liner with --answers under sudo', () => {
    expect(doc.answers).toMatch(/^SERVICE_API_KEY='<service API key>'$/m);
    expect(doc.commands.some((c) => /^curl -fsSL https:\/\/<setup_url>\/install\.sh \| sudo bash -s -- --answers \/root\/answers\.env/m.test(c))).toBe(true);
    expect(doc.commands.some((c) => c.includes('sudoedit /root/answers.env'))).toBe(true);
  });

  it('every placeholder in a block is mapped, or read from what an earlier block printed', () => {
    for (const [i, block] of [...doc.commands, doc.answers].entries()) {
      let filled = block;
      for (const [k, v] of Object.entries(map)) filled = filled.split(k).join(v);
      for (const [placeholder, from] of Object.entries(FROM_OUTPUT)) {
        if (!filled.includes(placeholder)) continue;
        expect(doc.commands.slice(0, i).some((earlier) => from.source.test(earlier)), `${placeholder} needs an earlier block matching ${from.source}`).toBe(true);
        filled = filled.split(placeholder).join('x');
      }
      expect(filled.match(/<[a-z_ -]+>/gi), block).toBeNull();
    }
  });

  it('the device is paired in its own section, the request id read from `devices list` as printed', () => {
    const pairing = doc.commands.map((c, i) => ({ c, section: doc.sections[i] })).filter((b) => /service-deploy devices (list|approve)/.test(b.c));
    expect(pairing.map((b) => b.section)).toEqual(['5. Pair a device', '5. Pair a device']);
    expect(doc.sections[0]).toBe('2. Gather the answers');
    // What `service-deploy devices list` prints for a pending request (src/ops/devices.ts).
    expect(FROM_OUTPUT['<request-id>']!.read('pending  3f2a9c1e-77aa  linux  cli  from 100.101.102.103\napprove one with: ...\n0 paired device(s)\n')).toBe('3f2a9c1e-77aa');
    expect(FROM_OUTPUT['<request-id>']!.read('no devices waiting for approval\n0 paired device(s)\n')).toBeUndefined();
  });

  it("a failed block's first line of failure says why (the install's failed step, not the recap)", () => {
    const out = ['preflight ok', '\x1b[31m✖ Health check (gateway /healthz): the gateway does not answer http://127.0.0.1:18789/healthz\x1b[0m', 'recap: ok=20 changed=3 skipped=1 failed=1', ''].join('\n');
    expect(failureLine(out)).toBe('✖ Health check (gateway /healthz): the gateway does not answer http://127.0.0.1:18789/healthz');
    expect(failureLine('just this\n')).toBe('just this');
    expect(failureLine('')).toBe('(no output)');
  });
});
