import { describe, expect, it } from 'vitest';
import { SKIPPED, placeholders, readQuickstart } from './e2e/quickstart.js';

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

  it('every placeholder in a block is mapped or the block is skipped with a reason', () => {
    for (const block of [...doc.commands, doc.answers]) {
      if (SKIPPED.some((s) => block.includes(s.placeholder))) continue;
      let filled = block;
      for (const [k, v] of Object.entries(map)) filled = filled.split(k).join(v);
      expect(filled.match(/<[a-z_ -]+>/gi), block).toBeNull();
    }
  });
});
