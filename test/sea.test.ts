import { execa, execaSync } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { describe, expect, it } from 'vitest';
import { BINARY, PINNED_NODE, REPO, cleanEnv, requireBinary, runBinary } from './helpers/binary.js';
import { tempDir } from './helpers/tmp.js';
import { jsonOutput } from './helpers/json-schemas.js';

const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8'));

describe('the single executable', () => {
  it('prints its version', async () => {
    const result = await runBinary(['--version']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout.trim()).toBe(pkg.version);
  });

  it('--version --verbose (either order, -V too) names the Node it is built on: the pinned node-linux-<arch>', async () => {
    const lock = JSON.parse(fs.readFileSync(path.join(REPO, 'package-lock.json'), 'utf8'));
    const node: string = lock.packages[`node_modules/node-linux-${process.arch}`].version;
    for (const args of [['--version', '--verbose'], ['--verbose', '--version'], ['-V', '--verbose']]) {
      const result = await runBinary(args);
      expect(result.exitCode, args.join(' ')).toBe(0);
      const [first, second] = result.stdout.split('\n');
      expect(first).toBe(`service-deploy ${pkg.version}`);
      expect(second).toMatch(new RegExp(`^Node\\.js ${node.replaceAll('.', '\\.')} linux-${process.arch} \\(V8 [^,]+, OpenSSL \\d+\\.\\d+\\.\\d+[^)]*\\)$`));
    }
  });

  it('runs from any folder and reads its embedded assets, not the repository', async () => {
    const dir = tempDir();
    const copy = path.join(dir, 'service-deploy');
    fs.copyFileSync(requireBinary(), copy);
    fs.chmodSync(copy, 0o755);
    const result = await execa(copy, ['profile', '--json'], { cwd: dir, env: cleanEnv(), extendEnv: false, reject: false });
    expect(result.exitCode).toBe(0);
    const profile = jsonOutput('profile', result.stdout);
    const embedded = JSON.parse(fs.readFileSync(path.join(REPO, 'templates/service-profile.json'), 'utf8'));
    expect(profile.aiGatewayUrl).toBe(embedded.aiGatewayUrl);
    expect(profile.voiceProviders).toEqual(embedded.voiceProviders);
  });

  it('applies environment overrides to the service profile', async () => {
    const result = await runBinary(['profile', '--json'], {
      env: cleanEnv({ SERVICE_AI_GATEWAY_URL: 'http://127.0.0.1:9999/v1/', SERVICE_MCP_URL: 'http://127.0.0.1:9998/mcp' }),
    });
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      aiGatewayUrl: 'http://127.0.0.1:9999/v1',
      mcpUrl: 'http://127.0.0.1:9998/mcp',
    });
  });

  it('rejects a non-https override naming the variable, exit 2', async () => {
    const result = await runBinary(['profile'], { env: cleanEnv({ SERVICE_PARTNER_API_URL: 'http://api.example.com' }) });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('SERVICE_PARTNER_API_URL');
  });

  it('ignores NODE_OPTIONS=--require (no code injection into a root tool)', async () => {
    const dir = tempDir();
    const marker = path.join(dir, 'injected');
    const payload = path.join(dir, 'payload.cjs');
    fs.writeFileSync(payload, `require('fs').writeFileSync(${JSON.stringify(marker)}, 'pwned');`);
    const env = cleanEnv({ NODE_OPTIONS: `--require ${payload}` });

    // Control: the same NODE_OPTIONS does inject into a plain Node of the same version.
    await execa(PINNED_NODE, ['-e', '0'], { env, extendEnv: false });
    expect(fs.existsSync(marker)).toBe(true);
    fs.rmSync(marker);

    for (const args of [['--version'], ['--help'], ['profile']]) {
      const result = await execa(BINARY, args, { env, extendEnv: false, reject: false });
      expect(result.exitCode).toBe(0);
    }
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('ends quietly when stdout is closed early (--help | head -1)', async () => {
    const result = await execa('bash', ['-c', `set -o pipefail; "${BINARY}" --help | head -1`], {
      env: cleanEnv(),
      extendEnv: false,
      reject: false,
    });
    expect(result.stdout).toMatch(/^service-deploy/);
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
  });

  it('has --help on every command and documents exit codes', async () => {
    const top = await runBinary(['--help']);
    expect(top.stdout).toContain('Exit codes: 0 done, 1 failed while working, 2 refused');
    for (const command of ['install', 'doctor', 'guard', 'status', 'chat', 'partner', 'profile']) {
      expect(top.stdout).toContain(`service-deploy ${command}`);
      const help = await runBinary([command, '--help']);
      expect(help.exitCode, command).toBe(0);
      expect(help.stdout, command).toContain('--help');
    }
  });

  it("a bare --help comes from the text the build saved: the same as the program's own, and a narrow terminal still gets it wrapped to fit", async () => {
    const saved = await runBinary(['--help']);
    // Any other argument goes through the CLI parser; --verbose changes nothing in the help.
    const parsed = await runBinary(['--help', '--verbose']);
    expect(saved.exitCode).toBe(0);
    expect(saved.stdout).toBe(parsed.stdout);
    expect((await runBinary(['-h'])).stdout).toBe(parsed.stdout);
    // On an 80-column terminal the program wraps its help to 80 columns.
    const narrow = await execa('script', ['-qc', `stty cols 80; "${BINARY}" --help`, '/dev/null'], { env: cleanEnv(), extendEnv: false, reject: false });
    const lines = narrow.stdout.replaceAll('\r', '').split('\n');
    expect(lines.length, narrow.stdout).toBeGreaterThan(parsed.stdout.split('\n').length);
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(80);
    expect(lines.join('\n')).toContain('Exit codes: 0 done');
  });

  it('exits 2 with a hint on an unknown flag', async () => {
    const result = await runBinary(['--no-such-flag']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/--no-such-flag is not an option of `install`/);
    expect(result.stderr).toContain('--help');
  });

  it('built both architectures and a matching SHA256SUMS', async () => {
    const sums = fs.readFileSync(path.join(REPO, 'dist/SHA256SUMS'), 'utf8');
    for (const arch of ['x64', 'arm64']) {
      const file = path.join(REPO, 'dist', `service-deploy-linux-${arch}`);
      const { stdout } = await execa('sha256sum', [file]);
      expect(sums).toContain(`${stdout.split(' ')[0]}  service-deploy-linux-${arch}`);
    }
    const { stdout: kind } = await execa('file', ['-b', path.join(REPO, 'dist/service-deploy-linux-arm64')], { reject: false });
    if (kind) expect(kind).toMatch(/aarch64|ARM aarch64/);
  });
});

describe('the build: chunks loaded on demand', () => {
  const chunks = () => JSON.parse(fs.readFileSync(path.join(REPO, 'build/chunks.json'), 'utf8')) as Record<string, { imports: string[]; inputs: string[] }>;
  /** The sources a start loads: `roots` and every chunk they import statically. */
  const loaded = (graph: ReturnType<typeof chunks>, roots: string[]) => {
    const closure = new Set<string>();
    const visit = (name: string) => {
      if (closure.has(name) || !graph[name]) return;
      closure.add(name);
      for (const i of graph[name]!.imports) if (!i.startsWith('lazy ')) visit(i);
    };
    for (const root of roots) visit(root);
    return [...closure].flatMap((name) => graph[name]!.inputs.map((i) => i.split(' ')[1]!));
  };

  it('--help loads the CLI only: none of the install, doctor, guard, host, zod, tar, JSON5 or partner code', () => {
    const graph = chunks();
    const cli = graph['main.js']!.imports.filter((i) => i.startsWith('lazy ')).map((i) => i.slice(5));
    const inputs = loaded(graph, ['main.js', ...cli]);
    expect(inputs.some((i) => i.includes('yargs'))).toBe(true);
    for (const heavy of ['src/steps/', 'src/install/install', 'src/doctor/', 'src/guard/', 'src/host/', 'zod', 'json5', 'tar/', 'libphonenumber', 'src/partner/', 'execa', 'listr2']) {
      expect(inputs.filter((i) => i.includes(heavy)), heavy).toEqual([]);
    }
  });

  it('a bare guard, doctor or status (src/bare.ts) loads no CLI parser', () => {
    const graph = chunks();
    const bare = Object.keys(graph).find((name) => name.startsWith('bare-'));
    expect(bare, 'a chunk for src/bare.ts').toBeDefined();
    const inputs = loaded(graph, ['main.js', bare!]);
    expect(inputs).toContain('src/bare.ts');
    expect(inputs.filter((i) => /yargs|cliui|src\/cli\.ts/.test(i))).toEqual([]);
  });

  it("an import() between chunks keeps ES module semantics: `default` is the default export, not Node's CommonJS interop", () => {
    // esbuild marks a CommonJS-interop import() with a second argument 1 (`__toESM(require("./x.js"), 1)`):
    // listr2's `(await import('wrap-ansi')).default` then got the module object and the terminal renderer failed.
    const dir = path.join(REPO, 'build/chunks');
    const interop = fs.readdirSync(dir).filter((name) => name.endsWith('.js') && /\(require\("\.\/[\w.-]+\.js"\),1\)/.test(fs.readFileSync(path.join(dir, name), 'utf8')));
    expect(interop).toEqual([]);
  });

  it("zod's locales are not bundled (a namespace import lets the bundler drop what is unused)", () => {
    const inputs = Object.values(chunks()).flatMap((chunk) => chunk.inputs);
    expect(inputs.filter((i) => i.includes('zod/v4/locales/') && !i.includes('locales/en.js'))).toEqual([]);
  });

  it('an error class thrown in one chunk is recognised in another (one module instance): exit 2, no "Internal error"', async () => {
    // Raised in the answers' chunk (loaded by render), judged by the CLI's chunk.
    const result = await runBinary(['render', 'cron'], { env: cleanEnv({ SERVICE_DEPLOY_ROOT: tempDir() }) });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/^Error: missing answers/);
    expect(result.stderr).not.toContain('Internal error');
  });

  it('the wrap-ansi shim lays out plain text exactly like wrap-ansi, and hands anything else to it', async () => {
    const out = path.join(tempDir(), 'shim.mjs');
    await esbuild.build({
      stdin: { contents: "export { default as shim } from './scripts/shims/wrap-ansi.mjs'; export { default as real } from 'wrap-ansi';", resolveDir: REPO },
      bundle: true,
      format: 'esm',
      platform: 'node',
      outfile: out,
      logLevel: 'error',
      plugins: [{ name: 'real', setup: (b) => b.onResolve({ filter: /^wrap-ansi-real$/ }, () => ({ path: path.join(REPO, 'node_modules/wrap-ansi/index.js') })) }],
    });
    const { shim, real } = (await import(out)) as Record<'shim' | 'real', (s: string, c: number, o?: object) => string>;
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const alphabet = 'abc defgh  ijklmnopq--rstuv.wxyz\n';
    for (let n = 0; n < 3000; n++) {
      const text = Array.from({ length: Math.floor(random() * 120) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
      const columns = 1 + Math.floor(random() * 40);
      const options = [{}, { hard: true }, { trim: false }, { hard: true, trim: false }, { wordWrap: false }, { hard: true, wordWrap: false, trim: false }][n % 6];
      expect(shim(text, columns, options), JSON.stringify({ text, columns, options })).toBe(real(text, columns, options));
    }
    expect(shim('\u001B[31mred text\u001B[39m and more', 8)).toBe(real('\u001B[31mred text\u001B[39m and more', 8));
    expect(shim('Grüße aus Köln und 日本語', 6, { hard: true })).toBe(real('Grüße aus Köln und 日本語', 6, { hard: true }));
  });
});

describe('the build refuses a Node other than the pinned one', () => {
  const pinned = execaSync(PINNED_NODE, ['--version']).stdout.trim();
  // Another Node on this machine (the system's): the build must stop before it writes anything.
  const other = ['/usr/bin/node', '/usr/local/bin/node', '/bin/node'].find((p) => fs.existsSync(p) && execaSync(p, ['--version'], { reject: false }).stdout.trim() !== pinned);

  it.skipIf(!other)('names both Nodes and says how to build, exit 1, before writing anything', async () => {
    const stamp = fs.statSync(path.join(REPO, 'build')).mtimeMs;
    const run = await execa(other!, ['scripts/build.mjs', '--native'], { cwd: REPO, env: cleanEnv(), extendEnv: false, reject: false });
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toContain(`not the pinned Node ${pinned.slice(1)}`);
    expect(run.stderr).toContain('run `npm run build`');
    expect(run.stdout).toBe('');
    expect(fs.statSync(path.join(REPO, 'build')).mtimeMs).toBe(stamp);
  });
});
