// The documented one-liner under sudo: `curl ... | sudo bash -s -- --answers FILE`.
// Real sudo (Debian's default sudoers: env_reset) drops exported answers; an answers
// file named on the command line (--answers, or SERVICE_ANSWERS_FILE given to sudo
// itself) survives it. The sandbox's own variables (root folder, stand-in commands,
// loopback sources: no secret) are passed after sudo with `env`, as a test must.
import { execa } from 'execa';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BINARY, REPO, requireBinary } from '../helpers/binary.js';
import { makeTestCa, serveDirectory, type StaticServer } from '../helpers/https-server.js';
import { SECRETS, makeSandbox, type Sandbox } from '../helpers/sandbox.js';
import { tempDir } from '../helpers/tmp.js';
import { budget } from '../helpers/budget.js';

const ARCH = process.arch === 'arm64' ? 'arm64' : 'x64';
const haveSudo = fs.existsSync('/usr/bin/sudo') && process.getuid?.() === 0;
const ANSWER_ENV = { SERVICE_CUSTOMER_NAME: 'Sudo Dental', SERVICE_API_KEY: SECRETS.apiKey, SERVICE_MESH_AUTH_KEY: SECRETS.meshAuthKey, SERVICE_MCP_TOKEN: SECRETS.mcpToken };

let sb: Sandbox;
let setup: StaticServer;
let caFile: string;

beforeAll(async () => {
  requireBinary();
  sb = await makeSandbox();
  // install.sh finds the current binary in place and skips the download (SHA256SUMS matches).
  fs.mkdirSync(path.join(sb.root, 'usr/local/bin'), { recursive: true });
  fs.copyFileSync(BINARY, path.join(sb.root, 'usr/local/bin/service-deploy'));
  fs.chmodSync(path.join(sb.root, 'usr/local/bin/service-deploy'), 0o755);
  // The build's signed SHA256SUMS (it lists this binary) and its signature; install.sh is
  // the build's too (it carries the key that signed them).
  const served = tempDir('sd-sudo-setup-');
  for (const f of ['SHA256SUMS', 'SHA256SUMS.sig']) fs.copyFileSync(path.join(REPO, 'dist', f), path.join(served, f));
  const sha = createHash('sha256').update(fs.readFileSync(BINARY)).digest('hex');
  if (!fs.readFileSync(path.join(served, 'SHA256SUMS'), 'utf8').includes(`${sha}  service-deploy-linux-${ARCH}\n`)) throw new Error('dist/SHA256SUMS does not list dist/service-deploy: run npm run build');
  const ca = makeTestCa();
  caFile = ca.caFile;
  setup = await serveDirectory(served, ca);
}, 120_000);
afterAll(async () => {
  await setup?.close();
  await sb?.close();
});

/** `cat install.sh | sudo [sudoArgs] env <sandbox vars> bash -s -- ARGS`, with `exported` in the caller's environment. */
function viaSudo(args: string[], options: { exported?: Record<string, string>; sudoArgs?: string[] } = {}) {
  const sandboxVars = Object.entries(sb.env({ SERVICE_SETUP_URL: setup.url, SERVICE_CA_BUNDLE: caFile }))
    .filter(([k]) => k.startsWith('SERVICE_') || k === 'PATH' || k.startsWith('STANDIN_'))
    .map(([k, v]) => `${k}=${v}`);
  return execa('sudo', [...(options.sudoArgs ?? []), 'env', ...sandboxVars, 'bash', '-s', '--', ...args], {
    input: fs.readFileSync(path.join(REPO, 'dist/install.sh')),
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root', ...options.exported },
    extendEnv: false,
    reject: false,
    timeout: budget(240_000),
  });
}

function answersFile(mode: number): string {
  const dir = tempDir('sd-sudo-answers-');
  const file = path.join(dir, 'answers.env');
  fs.writeFileSync(file, `${Object.entries(ANSWER_ENV).map(([k, v]) => `${k}='${v}'`).join('\n')}\n`, { mode });
  fs.chmodSync(file, mode);
  return file;
}

const secretsIn = (text: string) => Object.entries(SECRETS).filter(([, v]) => text.includes(v)).map(([k]) => k);

describe.skipIf(!haveSudo)('answers that survive sudo (real sudo, env_reset)', { timeout: 600_000 }, () => {
  it('sudo drops exported answers: the install lists them missing and says why, nothing is installed', async () => {
    const direct = await execa('sudo', ['printenv', 'SERVICE_API_KEY'], { env: { PATH: '/usr/bin:/bin', ...ANSWER_ENV }, extendEnv: false, reject: false });
    expect(direct.exitCode, 'sudo kept SERVICE_API_KEY: this sudoers does not reset the environment').toBe(1);
    const r = await viaSudo(['--non-interactive'], { exported: ANSWER_ENV });
    expect(r.exitCode, r.stderr).toBe(2);
    expect(r.stderr).toContain('no answers in the environment or a file (sudo drops exported variables: pass --answers FILE)');
    expect(r.stderr).toMatch(/missing answers[\s\S]*service API key[\s\S]*sudo drops exported variables: put the answers in a 0600 file and pass --answers FILE/);
    expect(fs.existsSync(path.join(sb.root, 'var/lib/service-deploy'))).toBe(false);
  });

  it('an answers file readable by others is refused (exit 2) naming why; nothing is installed', async () => {
    const file = answersFile(0o644);
    const r = await viaSudo(['--answers', file, '--non-interactive']);
    expect(r.exitCode, r.stderr).toBe(2);
    expect(r.stderr).toContain(`--answers ${file}: refused: its mode is 0644: group or other users can read its secrets (0600 wanted)`);
    expect(r.stderr).toContain(`chmod 600 ${file}`);
    expect(secretsIn(`${r.stdout}${r.stderr}`)).toEqual([]);
    expect(fs.existsSync(path.join(sb.root, 'var/lib/service-deploy'))).toBe(false);
  });

  it('SERVICE_ANSWERS_FILE given to sudo itself installs; install.sh names the answers it found, never their values', async () => {
    const file = answersFile(0o600);
    const r = await viaSudo(['--non-interactive'], { sudoArgs: [`SERVICE_ANSWERS_FILE=${file}`] });
    expect(r.exitCode, r.stderr.slice(-3000)).toBe(0);
    expect(r.stderr).toContain(`answers file ${file} (SERVICE_ANSWERS_FILE): SERVICE_CUSTOMER_NAME SERVICE_API_KEY SERVICE_MESH_AUTH_KEY SERVICE_MCP_TOKEN`);
    expect(secretsIn(`${r.stdout}${r.stderr}`)).toEqual([]);
    const stored = JSON.parse(sb.read('var/lib/service-deploy/answers.json')!);
    expect(stored).toMatchObject({ customerName: 'Sudo Dental', apiKey: SECRETS.apiKey, mcpToken: SECRETS.mcpToken });
  });

  it('the documented one-liner (--answers FILE after bash -s --) re-runs with the file; exported values still never arrive', async () => {
    const file = answersFile(0o600);
    fs.appendFileSync(file, 'SERVICE_MODEL=model-from-the-file\n');
    const r = await viaSudo(['--answers', file, '--non-interactive'], { exported: { SERVICE_MODEL: 'model-from-the-environment' } });
    expect(r.exitCode, r.stderr.slice(-3000)).toBe(0);
    expect(r.stderr).toContain(`answers file ${file} (--answers): SERVICE_CUSTOMER_NAME SERVICE_API_KEY SERVICE_MESH_AUTH_KEY SERVICE_MCP_TOKEN SERVICE_MODEL`);
    expect(r.stderr).not.toContain('answers from the environment');
    expect(JSON.parse(sb.read('var/lib/service-deploy/answers.json')!).modelId).toBe('model-from-the-file');
  });
});
