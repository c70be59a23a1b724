// The doc test (issue 21): docs/quickstart.md's commands, extracted from its code blocks
// and run exactly as written (`sudo` included) as the first install on the booted server,
// so the quickstart cannot drift from the product.
//
// How the page is read:
// - every ```sh block is run, in order, as one bash script (`-e -o pipefail`), by the
//   user `ubuntu` (what a cloud image gives: NOPASSWD sudo), with real sudo and its
//   env_reset;
// - the ```dotenv block is what the operator types into `sudoedit /root/answers.env`:
//   sudoedit's editor (SUDO_EDITOR) writes it, placeholders filled in;
// - placeholders are substituted by placeholders() below (the only edits), or, for what
//   the operator copies from an earlier block's output (`<request-id>` from `devices
//   list`), read from that output the way a newcomer reads it (FROM_OUTPUT); any other
//   `<...>` left in a block fails the test;
// - what the page asks the operator to do away from the server is done for real: section
//   5's "open the gateway UI from a device on the mesh and paste the key" before its
//   blocks, by a real browser with its own device identity over the mesh path
//   (test/e2e/pairing.ts), refused until the quickstart's own `devices approve` ran; its
//   "the page connects by itself; close the tab, quit the browser" after them, with what
//   the browser then keeps and sends read from it.
// Each section is timed: the walkthrough from the empty booted container to a chat reply
// and a paired device, quoted in the report (`quickstart.walkthrough`) and the last lines.
// The e2e's own sources (loopback setup URL, stand-in services, test CA; never an
// answer) reach through sudo by name (env_keep in a sudoers drop-in), and the test CA is
// trusted system-wide so the doc's plain `curl -fsSL https://...` works. All of that is
// set up before the /etc snapshot the uninstall at the end compares with.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { REPO } from '../helpers/binary.js';
import { CUSTOMER, log, seconds, type World, type WorldOptions } from './harness.js';
import { devicePaired, meshDeviceAsksToPair, type MeshDevice, type PairedBrowser } from './pairing.js';
import { budget } from '../helpers/budget.js';

/** The server scenario's World needs sudo in its root (a cached image: debootstrap base + sudo). */
export const QUICKSTART_WORLD: WorldOptions = { extraPackages: ['sudo'] };

const DOC = path.join(REPO, 'docs/quickstart.md');
const USER = 'ubuntu';
const EDITOR = '/usr/local/bin/e2e-quickstart-editor';
const TYPED = `/home/${USER}/.e2e-typed-answers.env`;

/**
 * Placeholders the operator fills from what an earlier block printed: the block it is
 * read from (`source`, matched against the block's text) and how a reader finds it.
 */
export const FROM_OUTPUT: Record<string, { source: RegExp; read: (stdout: string) => string | undefined }> = {
  // `service-deploy devices list`: "pending  <request id>  <device> ..." per request.
  '<request-id>': { source: /service-deploy devices list/, read: (stdout) => /^pending\s+(\S+)/m.exec(stdout)?.[1] },
};

/** The documented mapping: placeholder -> the e2e's value. */
export function placeholders(world: Pick<World, 'setup' | 'secrets'>): Record<string, string> {
  return {
    '<setup_url>': world.setup.url.replace(/^https:\/\//, ''),
    '<customer name>': CUSTOMER,
    '<service API key>': world.secrets.apiKey!,
    '<mesh auth key>': world.secrets.meshAuthKey!,
    '<MCP token>': world.secrets.mcpToken!,
  };
}

export interface QuickstartDoc {
  /** The ```sh blocks, in order. */
  commands: string[];
  /** The `## ` heading each of those blocks is under ("5. Pair a device"). */
  sections: string[];
  /** The ```dotenv block (the answers file as typed). */
  answers: string;
}

export function readQuickstart(text = fs.readFileSync(DOC, 'utf8')): QuickstartDoc {
  const headings = [...text.matchAll(/^## (.+)$/gm)].map((m) => ({ at: m.index, title: m[1]!.trim() }));
  const sectionAt = (at: number) => headings.filter((h) => h.at < at).at(-1)?.title ?? '';
  const blocks = [...text.matchAll(/^```([\w-]*)[^\n]*\n([\s\S]*?)^```\s*$/gm)].map((m) => ({ lang: m[1]!, body: m[2]!, section: sectionAt(m.index) }));
  const answers = blocks.filter((b) => b.lang === 'dotenv');
  if (answers.length !== 1) throw new Error(`docs/quickstart.md: expected one dotenv block (the answers file), found ${answers.length}`);
  const sh = blocks.filter((b) => b.lang === 'sh');
  return { commands: sh.map((b) => b.body), sections: sh.map((b) => b.section), answers: answers[0]!.body };
}

function fill(text: string, map: Record<string, string>): string {
  let out = text;
  for (const [placeholder, value] of Object.entries(map)) out = out.split(placeholder).join(value);
  return out;
}

/** Before the first install: the user, sudo's settings for the e2e sources, the CA, the editor. Not part of the product's footprint. */
export async function prepareQuickstart(world: World): Promise<void> {
  const c = world.container;
  const sourcesText = fs.readFileSync(c.hostPath('/root/e2e/sources.env'), 'utf8');
  const names = [...sourcesText.matchAll(/^([A-Z_][A-Z0-9_]*)=/gm)].map((m) => m[1]!);
  expect(names.filter((n) => /API_KEY|AUTH_KEY|MCP_TOKEN|CUSTOMER/.test(n)), 'answers must not pass through sudo').toEqual([]);
  const sudoers = `# e2e (test/e2e/quickstart.ts): a cloud image's default user, and the loopback test sources (never an answer) kept through sudo\n${USER} ALL=(ALL) NOPASSWD:ALL\nDefaults env_keep += "${names.join(' ')}"\n`;
  await c.ok(`set -e
id ${USER} >/dev/null 2>&1 || useradd --create-home --shell /bin/bash ${USER}
cat >/etc/sudoers.d/90-e2e-quickstart <<'EOF'
${sudoers}EOF
chmod 0440 /etc/sudoers.d/90-e2e-quickstart
visudo -cq
cp /root/e2e/ca.pem /usr/local/share/ca-certificates/e2e-setup.crt
update-ca-certificates >/dev/null 2>&1`);
  // sudoedit's editor: the operator typing the doc's dotenv block.
  fs.mkdirSync(path.dirname(c.hostPath(EDITOR)), { recursive: true });
  fs.writeFileSync(c.hostPath(EDITOR), `#!/bin/sh\n# e2e: sudoedit's editor, as if the operator typed the answers (docs/quickstart.md's dotenv block)\ncat ${TYPED} >"$1"\n`, { mode: 0o755 });
  await c.ok(`chown root:root ${EDITOR} && chmod 0755 ${EDITOR}`);
}

export interface QuickstartRun {
  blocks: Array<{ section: string; command: string; exitCode: number; ms: number }>;
  /** Wall time per section of the page, in its order. */
  sections: Array<{ section: string; ms: number }>;
  installMs: number;
  wallMs: number;
  /** The pairing of section 5: the request the device was given, the device paired, what its browser keeps and sends. */
  pairing?: { requestId: string; deviceId: string; requestMs: number; connectedMs: number; browser?: PairedBrowser };
  /** The timed walkthrough, quotable (docs/e2e.md). */
  walkthrough: Walkthrough;
}

export interface Walkthrough {
  /** The container's boot (empty: nothing of ours), before the page starts. */
  bootMs: number;
  /** From the page's first command to a paired device (the chat reply comes before, in "Check it"). */
  toPairedDeviceMs: number;
  /** Boot + toPairedDeviceMs: an empty booted container to a chat reply and a paired device. */
  totalMs: number;
  line: string;
}

/** Runs docs/quickstart.md's commands as written (placeholders filled in), each block must exit 0. */
export async function runQuickstart(world: World): Promise<QuickstartRun> {
  const c = world.container;
  const doc = readQuickstart();
  const map = placeholders(world);
  const t = Date.now();
  // What the operator types into the editor: written from here (never argv), readable by the user only.
  fs.writeFileSync(c.hostPath(TYPED), fill(doc.answers, map), { mode: 0o600 });
  await c.ok(`chown ${USER}: ${TYPED} && chmod 600 ${TYPED}`);
  const run: QuickstartRun = { blocks: [], sections: [], installMs: 0, wallMs: 0, walkthrough: { bootMs: 0, toPairedDeviceMs: 0, totalMs: 0, line: '' } };
  const outputs: Array<{ script: string; stdout: string }> = [];
  let device: MeshDevice | undefined;
  let pairedAt = 0;
  let section: { section: string; start: number } | undefined;
  const endSection = () => section && run.sections.push({ section: section.section, ms: Date.now() - section.start });
  try {
    for (const [i, block] of doc.commands.entries()) {
      const shown = block.trim().split('\n')[0]!;
      if (doc.sections[i] !== section?.section) {
        endSection();
        section = { section: doc.sections[i]!, start: Date.now() };
        // The page's step away from the server, done before its commands.
        if (/pair a device/i.test(section.section)) {
          const asked = Date.now();
          device = await meshDeviceAsksToPair(world);
          run.pairing = { requestId: device.requestId, deviceId: '', requestMs: Date.now() - asked, connectedMs: 0 };
        }
      }
      let script = fill(block, map);
      for (const [placeholder, from] of Object.entries(FROM_OUTPUT)) {
        if (!script.includes(placeholder)) continue;
        const earlier = outputs.filter((o) => from.source.test(o.script)).at(-1);
        expect(earlier, `docs/quickstart.md block ${i + 1} needs ${placeholder} from an earlier block matching ${from.source}`).toBeDefined();
        const value = from.read(earlier!.stdout);
        expect(value, `${placeholder} in what ${from.source} printed:\n${earlier!.stdout}`).toBeTruthy();
        if (placeholder === '<request-id>' && device) expect(value, 'the request `devices list` shows is the one the device was given').toBe(device.requestId);
        script = script.split(placeholder).join(value!);
      }
      const unmapped = script.match(/<[a-z_ -]+>/gi);
      expect(unmapped, `docs/quickstart.md block ${i + 1} has a placeholder the e2e does not map: add it to placeholders() or FROM_OUTPUT`).toBeNull();
      const file = `/home/${USER}/quickstart-${i + 1}.sh`;
      fs.writeFileSync(c.hostPath(file), script, { mode: 0o644 });
      const r = await c.sh(`set -a; . /root/e2e/sources.env; set +a; cd /home/${USER} && runuser -u ${USER} -- env HOME=/home/${USER} SUDO_EDITOR=${EDITOR} bash -e -o pipefail ${file}`, { timeoutMs: budget(15 * 60_000) });
      run.blocks.push({ section: doc.sections[i]!, command: shown, exitCode: r.exitCode, ms: r.ms });
      outputs.push({ script, stdout: r.stdout });
      const output = `${r.stdout}${r.stderr}`;
      const leaked = Object.entries(world.secrets).filter(([, v]) => output.includes(v)).map(([k]) => k);
      expect(leaked, `secrets in the output of quickstart block ${i + 1}`).toEqual([]);
      expect(r.exitCode, `docs/quickstart.md block ${i + 1} (${shown}) exit ${r.exitCode}: ${world.masked(failureLine(output))}\n${world.masked(output).slice(-4000)}`).toBe(0);
      if (script.includes('install.sh')) {
        run.installMs = r.ms;
        expect(r.stderr).toContain('answers file /root/answers.env (--answers): SERVICE_CUSTOMER_NAME SERVICE_API_KEY SERVICE_MESH_AUTH_KEY SERVICE_MCP_TOKEN');
        expect(output).toMatch(/recap: ok=\d+ changed=\d+ skipped=\d+ failed=0/);
      }
      if (script.includes('service-deploy chat')) expect(r.stdout).toContain('STAND-IN REPLY');
      if (script.includes('channel show')) expect(r.stdout).toMatch(/^pin {11}sha256:[0-9a-f]{64}$/m);
      if (script.includes('service-deploy devices approve')) {
        expect(device, 'a device asked to be paired before the approval block').toBeDefined();
        const approvedAt = Date.now();
        const paired = await devicePaired(world, device!);
        pairedAt = approvedAt + paired.connectedMs;
        run.pairing = { ...run.pairing!, deviceId: paired.deviceId, connectedMs: paired.connectedMs, browser: paired };
      }
    }
    endSection();
  } finally {
    fs.rmSync(c.hostPath(TYPED), { force: true });
    await device?.close();
  }
  // The doc removes the answers file after the install.
  expect(fs.existsSync(c.hostPath('/root/answers.env'))).toBe(false);
  expect(run.pairing?.deviceId, 'the quickstart paired a device').toBeTruthy();
  run.wallMs = Date.now() - t;
  const bootMs = world.timings.bootMs ?? 0;
  const toPairedDeviceMs = pairedAt - t;
  run.walkthrough = {
    bootMs,
    toPairedDeviceMs,
    totalMs: bootMs + toPairedDeviceMs,
    line: `newcomer walkthrough (docs/quickstart.md as written): boot ${seconds(bootMs)}; ${run.sections.map((s) => `${s.section} ${seconds(s.ms)}`).join('; ')}; empty booted container to a chat reply and a paired device: ${seconds(bootMs + toPairedDeviceMs)}`,
  };
  log(`quickstart: ${run.blocks.length} blocks, install ${seconds(run.installMs)}, all ${seconds(run.wallMs)}`);
  log(run.walkthrough.line);
  return run;
}

/**
 * The line of a command's output that says why it failed, for the first line of an
 * assertion (CI's summary keeps only that): the last line naming a failure or an error
 * that is not the recap, else the last line.
 */
export function failureLine(output: string): string {
  const lines = output.split('\n').map((line) => line.replace(/\x1b\[[0-9;]*m/g, '').trim()).filter(Boolean);
  const telling = lines.filter((line) => /✖|error|fail|refus|cannot|does not|timed out/i.test(line) && !/^recap:/.test(line));
  return (telling.at(-1) ?? lines.at(-1) ?? '(no output)').slice(0, 300);
}
