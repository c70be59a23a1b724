#!/usr/bin/env node
// Builds the single executable:
//   1. bundle src/ with esbuild, split at every dynamic import() into chunks (ESM, the
//      only format esbuild splits), each turned into CommonJS for the SEA loader
//      (scripts/sea-main.cjs), which compiles a chunk only when it is first required;
//   2. for each target (linux-x64, linux-arm64): a stripped copy of the pinned Node
//      binary (npm packages node-linux-<arch>, integrity from package-lock.json; made once
//      per release, under build/), then Node's own single-executable build
//      (`node --build-sea`, run by the pinned Node of this machine) with sea-config.json,
//      every file of templates/ (subfolders too: the npm locks) embedded as an asset, writing the executable straight
//      from that stripped copy (strip first: stripping after the build destroys the
//      blob). The Node that builds must be the target's release (Node's SEA docs); the
//      arm64 package can lag behind the x64 one (docs/release.md), and test/arm64.test.ts
//      checks that the arm64 executable is byte for byte the one its own Node makes;
//   3. dist/service-deploy-linux-<arch>.xz (what install.sh downloads where xz exists;
//      cached by content), dist/service-deploy (this machine's arch), dist/SHA256SUMS;
//   4. the release signature: dist/SHA256SUMS.sig (ECDSA P-256 over SHA-256, DER: what
//      `openssl dgst -sha256 -verify` checks from OpenSSL 1.1.1 on) and dist/install.sh
//      carrying the public key it was made with. The private key comes from the file named by
//      SERVICE_DEPLOY_SIGNING_KEY (a release: it must be the key install.sh names), or
//      else a throwaway key of this checkout (build/dev-signing-key.pem: a development
//      build that only its own install.sh trusts). docs/release.md.
// Unchanged inputs skip the slow steps (a stamp per target).
//   --native   this machine's arch only, no .xz (a quicker local build)
//   --release  refuse to build without SERVICE_DEPLOY_SIGNING_KEY
import { execFileSync, spawn } from 'node:child_process';
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const build = path.join(repo, 'build');
const dist = path.join(repo, 'dist');
const esmDir = path.join(build, 'esm');
const chunksDir = path.join(build, 'chunks');
const pkg = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8'));
const lock = JSON.parse(fs.readFileSync(path.join(repo, 'package-lock.json'), 'utf8'));
const TARGETS = [
  { arch: 'x64', strip: ['strip', 'x86_64-linux-gnu-strip', 'llvm-strip'] },
  { arch: 'arm64', strip: ['aarch64-linux-gnu-strip', 'llvm-strip'] },
];
const hostArch = process.arch;
// --native (or SERVICE_DEPLOY_BUILD_ARCH=x64|arm64): one target only, for a quicker local build.
const only = process.argv.includes('--native') ? hostArch : process.env.SERVICE_DEPLOY_BUILD_ARCH;

refuseOtherNode();
fs.mkdirSync(build, { recursive: true });
fs.mkdirSync(dist, { recursive: true });

/**
 * Build-time shims (see scripts/shims/): a lazy `string-width`, a plain-text fast
 * `wrap-ansi`, a narrowed `@inquirer/prompts`, listr2's task ids without node:crypto,
 * and for yargs only a two-function `assert` and an `escalade/sync` that finds nothing.
 */
const startupShims = {
  name: 'startup-shims',
  setup(b) {
    const inYargs = (args) => /[\\/]node_modules[\\/]yargs[\\/]/.test(args.importer);
    b.onResolve({ filter: /^(node:)?assert$/ }, (args) => (inYargs(args) ? { path: path.join(repo, 'scripts/shims/assert.cjs') } : undefined));
    b.onResolve({ filter: /^escalade\/sync$/ }, (args) => (inYargs(args) ? { path: path.join(repo, 'scripts/shims/escalade-sync.cjs') } : undefined));
    b.onResolve({ filter: /^wrap-ansi$/ }, () => ({ path: path.join(repo, 'scripts/shims/wrap-ansi.mjs') }));
    b.onResolve({ filter: /^wrap-ansi-real$/ }, () => ({ path: path.join(repo, 'node_modules/wrap-ansi/index.js') }));
    b.onResolve({ filter: /^string-width$/ }, () => ({ path: path.join(repo, 'scripts/shims/string-width.cjs') }));
    b.onResolve({ filter: /^string-width-real$/ }, () => ({ path: path.join(repo, 'node_modules/string-width/index.js') }));
    b.onResolve({ filter: /^@inquirer\/prompts$/ }, () => ({ path: path.join(repo, 'scripts/shims/inquirer-prompts.mjs') }));
    b.onResolve({ filter: /^(node:)?crypto$/ }, (args) => (/[\\/]node_modules[\\/]listr2[\\/]/.test(args.importer) ? { path: path.join(repo, 'scripts/shims/listr2-crypto.cjs') } : undefined));
  },
};

const started = Date.now();
const release = process.argv.includes('--release');
if (release && !process.env.SERVICE_DEPLOY_SIGNING_KEY) throw new Error('--release: set SERVICE_DEPLOY_SIGNING_KEY to the release key file (docs/release.md)');
await bundle();
for (const target of TARGETS) {
  if (!only || only === target.arch) buildTarget(target);
}
await Promise.all(TARGETS.map(({ arch }) => compress(arch, !only)));
const native = path.join(dist, `service-deploy-linux-${hostArch}`);
if (fs.existsSync(native)) {
  // Copy and rename: a running dist/service-deploy (ETXTBSY) is replaced, not overwritten.
  const temp = path.join(dist, '.service-deploy.tmp');
  fs.copyFileSync(native, temp);
  fs.chmodSync(temp, 0o755);
  fs.renameSync(temp, path.join(dist, 'service-deploy'));
}
// Every artifact in dist/ (a one-arch rebuild keeps the other's entries true).
const sums = TARGETS.flatMap(({ arch }) => [`service-deploy-linux-${arch}`, `service-deploy-linux-${arch}.xz`])
  .map((name) => path.join(dist, name))
  .filter((file) => fs.existsSync(file))
  .map((file) => `${sha256(fs.readFileSync(file))}  ${path.basename(file)}`);
// Atomically, and only when it changes: a reader (a test copying dist/) never sees it half written.
const sumsFile = path.join(dist, 'SHA256SUMS');
if (!fs.existsSync(sumsFile) || fs.readFileSync(sumsFile, 'utf8') !== `${sums.join('\n')}\n`) {
  fs.writeFileSync(`${sumsFile}.tmp`, `${sums.join('\n')}\n`);
  fs.renameSync(`${sumsFile}.tmp`, sumsFile);
}
const signedWith = signRelease();
const version = execFileSync(path.join(dist, 'service-deploy'), ['--version'], { encoding: 'utf8' }).trim();
console.error(`built service-deploy ${version} in ${((Date.now() - started) / 1000).toFixed(1)} s -> dist/ (signed with ${signedWith})`);

async function bundle() {
  // ESM first (the only format esbuild splits), with linked source maps that the second
  // pass reads: the chunks' maps then point into src/ (src/stack.ts, --verbose).
  fs.rmSync(esmDir, { recursive: true, force: true });
  const result = await esbuild.build({
    entryPoints: { main: path.join(repo, 'src/main.ts') },
    outdir: esmDir,
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node26',
    // Full minification: a smaller script parses faster, and cold start is measured.
    minify: true,
    sourcemap: 'linked',
    sourcesContent: false,
    legalComments: 'none',
    logLevel: 'warning',
    chunkNames: '[name]-[hash]',
    metafile: true,
    plugins: [startupShims],
    define: {
      // ESM dependencies (yargs) ask import.meta.url for their own location.
      'import.meta.url': '__import_meta_url',
      SERVICE_DEPLOY_VERSION: JSON.stringify(pkg.version),
    },
  });
  // Which sources went into which chunk (for whoever wonders what a start loads).
  fs.writeFileSync(path.join(build, 'chunks.json'), JSON.stringify(chunkContents(result.metafile), null, 1));
  fs.rmSync(chunksDir, { recursive: true, force: true });
  // import/export between chunks become require/exports (import() a lazy require): the
  // loader gives every chunk one module instance, shared by all its importers. A chunk
  // that names import.meta.url gets it defined first. The banner's first line is a
  // comment that the loader's wrapper shares, so the code's lines are the map's lines.
  const chunks = fs.readdirSync(esmDir).filter((name) => name.endsWith('.js')).map((name) => path.join(esmDir, name));
  // Under our package.json ("type": "module") esbuild would give an import() between the
  // chunks Node's CommonJS interop (`default` = the whole module.exports): the chunks are
  // ES modules turned into CommonJS, whose `default` is their default export.
  fs.writeFileSync(path.join(esmDir, 'package.json'), '{ "type": "commonjs" }\n');
  const needsUrl = (file) => fs.readFileSync(file, 'utf8').includes('__import_meta_url');
  const comment = '// service-deploy chunk (scripts/sea-main.cjs)';
  for (const [entryPoints, banner] of [
    [chunks.filter(needsUrl), `${comment}\nvar __import_meta_url=require("node:url").pathToFileURL(__filename).href;`],
    [chunks.filter((file) => !needsUrl(file)), comment],
  ]) {
    if (entryPoints.length === 0) continue;
    await esbuild.build({
      entryPoints,
      outdir: chunksDir,
      bundle: false,
      platform: 'node',
      format: 'cjs',
      target: 'node26',
      minify: true,
      sourcemap: 'external',
      sourcesContent: false,
      legalComments: 'none',
      logLevel: 'warning',
      supported: { 'dynamic-import': false },
      banner: { js: banner },
    });
  }
}

function chunkContents(metafile) {
  return Object.fromEntries(
    Object.entries(metafile.outputs)
      .filter(([file]) => file.endsWith('.js'))
      .map(([file, output]) => [
        path.basename(file),
        {
          bytes: output.bytes,
          imports: output.imports.map((i) => `${i.kind === 'dynamic-import' ? 'lazy ' : ''}${path.basename(i.path)}`),
          inputs: Object.entries(output.inputs)
            .sort((a, b) => b[1].bytesInOutput - a[1].bytesInOutput)
            .map(([input, { bytesInOutput }]) => `${bytesInOutput} ${input.replace(/^node_modules\//, '')}`),
        },
      ]),
  );
}

function buildTarget({ arch, strip }) {
  // Every file under templates/, subfolders included (locks/<tree>/package-lock.json), by its path there.
  const templates = fs.readdirSync(path.join(repo, 'templates'), { recursive: true })
    .filter((name) => fs.statSync(path.join(repo, 'templates', name)).isFile())
    .map((name) => name.split(path.sep).join('/'))
    .sort();
  const base = JSON.parse(fs.readFileSync(path.join(repo, 'sea-config.json'), 'utf8'));
  // The SEA entry is a small loader; the chunks, their source maps and code caches are assets.
  const chunks = fs.readdirSync(chunksDir).filter((name) => name.endsWith('.js')).sort();
  const caches = path.join(build, `code-cache-${arch}`);
  fs.rmSync(caches, { recursive: true, force: true });
  if (base.useCodeCache && arch === hostArch) {
    // Made by the same Node (V8) as the target, with the binary's V8 flags: a cache is only
    // valid for the V8 (and the code-generation flags) that made it.
    execFileSync(nodeBinary(arch).binary, [...(base.execArgv ?? []), path.join(repo, 'scripts/code-cache.cjs'), chunksDir, caches], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }
  const versionFile = path.join(build, 'version.txt');
  fs.writeFileSync(versionFile, pkg.version);
  // The top-level help as printed to a pipe: the loader answers a bare --help with it.
  const helpFile = path.join(build, 'help.txt');
  execFileSync(process.execPath, [path.join(repo, 'scripts/help-text.cjs'), chunksDir, helpFile], { stdio: ['ignore', 'ignore', 'inherit'] });
  const config = {
    ...base,
    main: path.join(repo, base.main),
    // Node's own code cache of the loader: as above, only for a native build.
    useCodeCache: base.useCodeCache && arch === hostArch,
    assets: {
      ...Object.fromEntries(templates.map((name) => [`templates/${name}`, path.join(repo, 'templates', name)])),
      'version.txt': versionFile,
      'help.txt': helpFile,
      ...Object.fromEntries(chunks.flatMap((name) => [`chunks/${name}`, `chunks/${name}.map`].map((asset) => [asset, path.join(chunksDir, path.basename(asset))]))),
      ...Object.fromEntries(
        chunks.filter((name) => fs.existsSync(path.join(caches, `${name}.cache`))).map((name) => [`chunks/${name}.cache`, path.join(caches, `${name}.cache`)]),
      ),
    },
  };
  const { binary, integrity, version } = nodeBinary(arch);
  const out = path.join(dist, `service-deploy-linux-${arch}`);
  const work = path.join(build, `service-deploy-linux-${arch}.${process.pid}`); // concurrent builds must not share it
  config.executable = strippedNode(arch, binary, integrity, strip);
  config.output = work;
  const configPath = path.join(build, `sea-config-${arch}.json`);
  fs.writeFileSync(configPath, JSON.stringify({ ...config, output: out }, null, 2));
  // Everything the executable is made of: an unchanged set skips the build (a stamp per target).
  const stampPath = path.join(build, `stamp-${arch}`);
  const inputs = createHash('sha256').update(JSON.stringify({ ...config, output: undefined, executable: integrity }));
  for (const file of [config.main, ...Object.values(config.assets)]) inputs.update(fs.readFileSync(file));
  const stamp = inputs.digest('hex');
  if (fs.existsSync(out) && fs.existsSync(stampPath) && fs.readFileSync(stampPath, 'utf8') === stamp) return out;

  const builder = builderFor(arch, version);
  fs.writeFileSync(`${configPath}.work`, JSON.stringify(config, null, 2));
  try {
    execFileSync(builder, ['--build-sea', `${configPath}.work`], { stdio: ['ignore', 'ignore', 'inherit'] });
    fs.chmodSync(work, 0o755);
    fs.renameSync(work, out);
  } finally {
    fs.rmSync(work, { force: true });
    fs.rmSync(`${configPath}.work`, { force: true });
  }
  fs.writeFileSync(stampPath, stamp);
  return out;
}

/**
 * The Node that runs `--build-sea` for `arch`: the pinned Node of this machine (x64 for
 * arm64 too: a build makes both). Node's docs want the building Node to be the target's
 * release; where the arm64 package lags behind (26.12.0 for 26.12.1: docs/release.md), the
 * release line must match and test/arm64.test.ts proves the result is the one the arm64
 * Node makes itself. A different release line is refused: the blob format may differ.
 */
function builderFor(arch, version) {
  const own = nodeBinary(hostArch);
  const line = (v) => v.split('.').slice(0, 2).join('.');
  if (line(own.version) !== line(version)) {
    throw new Error(`node-linux-${arch}@${version} and node-linux-${hostArch}@${own.version} are not one release line: pin both to the same ${line(own.version)}.x in package.json`);
  }
  return own.binary;
}

/**
 * A stripped copy of the pinned Node for `arch`, made once per release under build/ (the
 * name carries the package's integrity); its size goes to build/node-<arch>.stripped-size
 * for the bench.
 */
function strippedNode(arch, binary, integrity, strip) {
  const key = createHash('sha256').update(integrity).digest('hex').slice(0, 16);
  const stripped = path.join(build, `node-${arch}.${key}.stripped`);
  if (!fs.existsSync(stripped)) {
    for (const old of fs.readdirSync(build).filter((f) => f.startsWith(`node-${arch}.`) && f.endsWith('.stripped'))) fs.rmSync(path.join(build, old), { force: true });
    const stripper = strip.find(commandExists);
    if (!stripper) throw new Error(`no strip for ${arch}: install one of ${strip.join(', ')} (Debian: binutils-aarch64-linux-gnu)`);
    const partial = `${stripped}.partial-${process.pid}`;
    fs.copyFileSync(binary, partial);
    fs.chmodSync(partial, 0o755);
    execFileSync(stripper, [partial]);
    fs.renameSync(partial, stripped);
  }
  fs.writeFileSync(path.join(build, `node-${arch}.stripped-size`), String(fs.statSync(stripped).size));
  return stripped;
}

/**
 * dist/service-deploy-linux-<arch>.xz for the binary in dist/, made with `xz -6` (about a
 * quarter of the size) and cached under build/ by the binary's hash, since compressing
 * takes a minute. `make` false (--native): no compressing, and no stale .xz left beside
 * a new binary.
 */
async function compress(arch, make) {
  const binary = path.join(dist, `service-deploy-linux-${arch}`);
  const out = `${binary}.xz`;
  if (!fs.existsSync(binary)) return fs.rmSync(out, { force: true });
  const hash = sha256(fs.readFileSync(binary)).slice(0, 16);
  const cached = path.join(build, `service-deploy-linux-${arch}.${hash}.xz`);
  if (!fs.existsSync(cached)) {
    if (!make) return fs.rmSync(out, { force: true });
    if (!commandExists('xz')) throw new Error('xz is needed to build the compressed binaries (Debian: apt-get install xz-utils)');
    for (const old of fs.readdirSync(build).filter((f) => f.startsWith(`service-deploy-linux-${arch}.`) && f.endsWith('.xz'))) {
      fs.rmSync(path.join(build, old), { force: true });
    }
    const partial = `${cached}.partial-${process.pid}`;
    await new Promise((resolve, reject) => {
      const xz = spawn('xz', ['-6', '-T0', '-c', binary], { stdio: ['ignore', fs.openSync(partial, 'w'), 'inherit'] });
      xz.on('error', reject);
      xz.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`xz exited ${code} compressing ${binary}`))));
    });
    fs.renameSync(partial, cached);
  }
  fs.copyFileSync(cached, out);
}

/** The release key's kind: ECDSA on P-256, the signature over SHA-256 (docs/release.md). */
function isReleaseKeyKind(key) {
  return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
}

/**
 * Signs dist/SHA256SUMS (ECDSA P-256 over SHA-256, the DER signature in SHA256SUMS.sig:
 * `openssl dgst -sha256 -verify` checks it on every OpenSSL from 1.1.1 on) and writes
 * dist/install.sh with the public key in RELEASE_PUBLIC_KEY. An existing SHA256SUMS.sig
 * that already verifies for these sums and this key is kept (ECDSA signatures differ
 * each time: an unchanged build stays byte for byte the same). Returns what signed it.
 */
function signRelease() {
  const KEY_LINE = /^RELEASE_PUBLIC_KEY="([^"]*)"$/m;
  const script = fs.readFileSync(path.join(repo, 'install.sh'), 'utf8');
  const trusted = KEY_LINE.exec(script)?.[1];
  if (trusted === undefined) throw new Error('install.sh has no RELEASE_PUBLIC_KEY="..." line');
  const keyFile = process.env.SERVICE_DEPLOY_SIGNING_KEY;
  let key;
  if (keyFile) {
    const real = fs.realpathSync(keyFile);
    if (real.startsWith(`${fs.realpathSync(repo)}${path.sep}`)) throw new Error(`SERVICE_DEPLOY_SIGNING_KEY: ${keyFile} is inside the repository; keep the release key outside it (docs/release.md)`);
    if (fs.statSync(real).mode & 0o077) throw new Error(`SERVICE_DEPLOY_SIGNING_KEY: ${keyFile} is readable by others; chmod 600 it`);
    key = createPrivateKey(fs.readFileSync(real));
  } else {
    const devKey = path.join(build, 'dev-signing-key.pem');
    // Made on first use; a throwaway key of another kind (an older checkout's Ed25519) is replaced.
    if (!fs.existsSync(devKey) || !isReleaseKeyKind(createPrivateKey(fs.readFileSync(devKey)))) {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
      fs.writeFileSync(`${devKey}.tmp`, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
      fs.renameSync(`${devKey}.tmp`, devKey);
    }
    key = createPrivateKey(fs.readFileSync(devKey));
  }
  if (!isReleaseKeyKind(key)) {
    const kind = key.asymmetricKeyType === 'ec' ? `EC ${key.asymmetricKeyDetails?.namedCurve ?? 'with explicit parameters'}` : key.asymmetricKeyType;
    throw new Error(`the signing key is ${kind}, not ECDSA P-256 (prime256v1, a named curve): docs/release.md says how to make one`);
  }
  const publicKey = createPublicKey(key).export({ type: 'spki', format: 'der' }).toString('base64');
  if (keyFile && publicKey !== trusted) {
    throw new Error(
      trusted
        ? 'SERVICE_DEPLOY_SIGNING_KEY is not the release key that install.sh trusts (RELEASE_PUBLIC_KEY); a key change is a rotation: docs/release.md'
        : `install.sh names no release key yet: set RELEASE_PUBLIC_KEY="${publicKey}" in install.sh and commit it (docs/release.md)`,
    );
  }
  const sums = fs.readFileSync(path.join(dist, 'SHA256SUMS'));
  const sigFile = path.join(dist, 'SHA256SUMS.sig');
  const verifies = (signature) => verify('sha256', sums, { key: createPublicKey(key), dsaEncoding: 'der' }, signature);
  if (!(fs.existsSync(sigFile) && verifies(fs.readFileSync(sigFile)))) {
    const signature = sign('sha256', sums, { key, dsaEncoding: 'der' });
    if (!verifies(signature)) throw new Error('the signature of SHA256SUMS does not verify');
    fs.writeFileSync(`${sigFile}.tmp`, signature);
    fs.renameSync(`${sigFile}.tmp`, sigFile);
  }
  const published = path.join(dist, 'install.sh');
  fs.writeFileSync(`${published}.tmp`, script.replace(KEY_LINE, `RELEASE_PUBLIC_KEY="${publicKey}"`), { mode: 0o755 });
  fs.renameSync(`${published}.tmp`, published);
  return keyFile ? 'the release key' : 'a throwaway development key, build/dev-signing-key.pem: not a release';
}

/**
 * The build runs on the pinned Node of this machine's architecture (node-linux-<arch>,
 * which `npm run build` puts first on PATH): the bundle targets it and the help text
 * is taken by running the chunks. Any other Node is refused before anything is
 * written, instead of leaving a binary that fails at its own start.
 */
function refuseOtherNode() {
  const name = `node-linux-${hostArch}`;
  const pinned = lock.packages[`node_modules/${name}`]?.version;
  if (!pinned) {
    console.error(`build: no Node is pinned for ${hostArch} (${name} in package-lock.json); the build runs on linux-x64 and linux-arm64 only`);
    process.exit(1);
  }
  if (process.version !== `v${pinned}`) {
    console.error(`build: this is Node ${process.version} (${process.execPath}), not the pinned Node ${pinned} (${name}): run \`npm run build\` (after \`npm ci\`), which runs the build on it`);
    process.exit(1);
  }
}

/** The pinned Node binary for `arch` (and its version), checked against package-lock.json. */
function nodeBinary(arch) {
  const name = `node-linux-${arch}`;
  const entry = lock.packages[`node_modules/${name}`];
  if (!entry?.integrity) throw new Error(`${name} is not pinned in package-lock.json`);
  const installed = path.join(repo, 'node_modules', name, 'bin', 'node');
  if (fs.existsSync(installed)) {
    const have = JSON.parse(fs.readFileSync(path.join(repo, 'node_modules', name, 'package.json'), 'utf8')).version;
    if (have !== entry.version) throw new Error(`node_modules/${name} is ${have}, package-lock.json pins ${entry.version}: run npm ci`);
    return { binary: installed, integrity: entry.integrity, version: entry.version };
  }
  // Another arch's package is skipped by npm install (os/cpu): fetch its tarball and verify it.
  const cache = path.join(repo, '.cache', `${name}-${entry.version}`);
  const binary = path.join(cache, 'package', 'bin', 'node');
  if (!fs.existsSync(binary)) {
    fs.mkdirSync(cache, { recursive: true });
    const file = execFileSync('npm', ['pack', `${name}@${entry.version}`, '--silent', '--pack-destination', cache], {
      encoding: 'utf8',
    }).trim().split('\n').pop();
    const tarball = path.join(cache, file);
    const [algo, expected] = entry.integrity.split(/-(.*)/s);
    const actual = createHash(algo).update(fs.readFileSync(tarball)).digest('base64');
    if (actual !== expected) throw new Error(`${name}@${entry.version}: integrity mismatch (got ${algo}-${actual})`);
    execFileSync('tar', ['-xzf', tarball, '-C', cache]);
  }
  return { binary, integrity: entry.integrity, version: entry.version };
}

function commandExists(command) {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function sha256(buffer) {
  return createHash('sha256').update(buffer).digest('hex');
}
