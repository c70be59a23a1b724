#!/usr/bin/env node
// npm run test:e2e: the real-server end to end (docs/e2e.md). Runs, at the same time,
// each in booted containers with networks of their own:
//   - the server scenario (test/e2e/server.e2e.ts) on every Debian suite of E2E_SUITES
//     (default bullseye,bookworm,trixie; bullseye, below the glibc floor, runs
//     test/e2e/floor.e2e.ts instead);
//   - the cloud-init catalog deploy (test/e2e/cloud-init.e2e.ts);
//   - the Ansible fleet (test/e2e/fleet.e2e.ts).
// E2E_SCENARIOS picks among server,cloud-init,fleet (default all). Prepares the machine
// (debootstrap, systemd-nspawn, gpg, ansible... from apt if missing), builds dist/ if it
// is missing, prints one timing table at the end, and cleans up what a killed run left.
// Exit 0 with "skipped: ..." only when this machine cannot run containers at all.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { CONTAINER_TOOLS, cache, cleanLeftovers as cleanMachine, containersUnavailable, releaseMissing, releaseRunLock, repo, takeRunLock } from './e2e-machine.mjs';

const BUDGET_MS = Number(process.env.E2E_BUDGET_MS ?? 55 * 60_000);
const ALL_SUITES = ['bullseye', 'bookworm', 'trixie'];
const ALL_SCENARIOS = ['server', 'cloud-init', 'fleet'];
const FLEET_TOOLS = { 'ansible-playbook': 'ansible-core', 'ansible-vault': 'ansible-core', 'ansible-lint': 'ansible-lint', ssh: 'openssh-client', 'ssh-keygen': 'openssh-client' };

const say = (line) => process.stdout.write(`[e2e] ${line}\n`);
function skip(reason) {
  say(`skipped: ${reason}`);
  process.exit(0);
}
function fail(reason) {
  say(`error: ${reason}`);
  process.exit(1);
}
const list = (value, all, name) => {
  const picked = (value ?? all.join(',')).split(/[\s,]+/).filter(Boolean);
  const bad = picked.filter((p) => !all.includes(p));
  if (bad.length > 0 || picked.length === 0) fail(`${name}=${value}: pick from ${all.join(', ')}`);
  return picked;
};

const suites = list(process.env.E2E_SUITES, ALL_SUITES, 'E2E_SUITES');
// bullseye is the older bound, below the install's glibc floor (2.34, src/steps/preflight.ts):
// its job proves the release signature on OpenSSL 1.1.1 and the refusal, not the scenario.
const SUITE_FILE = { bullseye: 'test/e2e/floor.e2e.ts' };
const scenarios = list(process.env.E2E_SCENARIOS, ALL_SCENARIOS, 'E2E_SCENARIOS');
/** One vitest process per job; they run at the same time (E2E_PARALLEL caps how many). */
const jobs = [
  ...(scenarios.includes('server') ? suites.map((suite) => ({ name: suite, file: SUITE_FILE[suite] ?? 'test/e2e/server.e2e.ts', env: { E2E_SUITE: suite }, report: `last-run-${suite}.json` })) : []),
  ...(scenarios.includes('cloud-init') ? [{ name: 'cloud-init', file: 'test/e2e/cloud-init.e2e.ts', env: {}, report: 'last-run-cloud-init.json' }] : []),
  ...(scenarios.includes('fleet') ? [{ name: 'fleet', file: 'test/e2e/fleet.e2e.ts', env: {}, report: 'last-run-fleet.json' }] : []),
];
const parallel = Math.max(1, Number(process.env.E2E_PARALLEL ?? jobs.length));

// --- can this machine run a booted container at all? (missing tools: apt-get)
const unavailable = containersUnavailable({ ...CONTAINER_TOOLS, ...(scenarios.includes('fleet') ? FLEET_TOOLS : {}) }, say);
if (unavailable) skip(unavailable);

// --- one run at a time on this machine (it is shared; the runs are heavy)
takeRunLock(say, fail);

/** This run's id: the jobs' harnesses write it into their container and network records. */
const runId = `${process.pid}-${Date.now()}`;
const cleanLeftovers = () => cleanMachine(runId, say);

/** Runs one job's vitest, every output line prefixed with the job's name. */
function runJob(job, env) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(path.join(repo, 'node_modules', '.bin', 'vitest'), ['run', '--config', 'test/e2e/vitest.config.ts', job.file], {
      cwd: repo,
      env: { ...env, NO_COLOR: '1', FORCE_COLOR: '0', E2E_RUN_ID: runId, ...job.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    const tag = `[${job.name}]`.padEnd(13);
    for (const stream of [child.stdout, child.stderr]) readline.createInterface({ input: stream }).on('line', (line) => process.stdout.write(`${tag}${line}\n`));
    child.on('exit', (code, sig) => {
      children.delete(child);
      resolve({ job, code: code ?? (sig ? 1 : 0), ms: Date.now() - started });
    });
  });
}

/**
 * The disk a job takes at its peak (measured on a cold machine: each booted server's root
 * image grows to about 3 GiB, the cold download caches add their share), and what stays
 * free besides. Jobs start while their sum fits in the space free at the start, largest
 * first; the others wait for a running one to end. A job that cannot fit even alone still
 * runs, alone, with a warning: the estimate may be wrong, and a clear failure beats none.
 */
const DISK_MARGIN = 2 * 2 ** 30;
const gib = (bytes) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;
function diskNeed(job) {
  const gibibytes = job.name === 'fleet' ? 10 : job.name === 'cloud-init' ? 3.5 : job.file.endsWith('floor.e2e.ts') ? 1.5 : 4;
  return gibibytes * 2 ** 30;
}

async function runWithinDisk(jobs, env, freeAtStart) {
  const room = freeAtStart === undefined ? Infinity : freeAtStart - DISK_MARGIN;
  const pending = [...jobs].sort((a, b) => diskNeed(b) - diskNeed(a));
  const running = new Set();
  const told = new Set();
  let reserved = 0;
  while (pending.length > 0 || running.size > 0) {
    for (let i = 0; i < pending.length && running.size < parallel; ) {
      const job = pending[i];
      const need = diskNeed(job);
      if (reserved + need > room && running.size > 0) {
        if (!told.has(job.name)) say(`${job.name} waits for disk space: it needs about ${gib(need)}; ${gib(Math.max(0, room - reserved))} is not yet promised to a running job`);
        told.add(job.name);
        i += 1;
        continue;
      }
      if (need > room) say(`warning: ${job.name} needs about ${gib(need)} of disk and ${gib(Math.max(0, freeAtStart))} is free: running it alone; it may fail for want of space`);
      pending.splice(i, 1);
      reserved += need;
      const done = runJob(job, env).then((result) => {
        results.push(result);
        reserved -= need;
        running.delete(done);
      });
      running.add(done);
    }
    if (running.size > 0) await Promise.race(running);
  }
}

const children = new Set();
let exitCode = 1;
const started = Date.now();
let results = [];
try {
  cleanLeftovers();
  const env = { ...process.env, PATH: `${path.join(repo, 'node_modules', '.bin')}:${process.env.PATH}` };
  // The signed release the e2e serves (docs/release.md): a --native build has no .xz.
  // E2E_DIST names another build's folder: served as it is, never rebuilt here.
  if (releaseMissing()) {
    say('dist/ has no complete release: npm run build');
    execFileSync('npm', ['run', 'build'], { cwd: repo, stdio: 'inherit', env });
  }
  for (const job of jobs) fs.rmSync(path.join(cache, job.report), { force: true });
  say(`running ${jobs.map((j) => j.name).join(', ')} (up to ${Math.min(parallel, jobs.length)} at a time, as the disk allows)`);
  const forward = (sig) => {
    for (const c of children) c.kill(sig);
  };
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  const budget = setTimeout(() => {
    say(`the e2e exceeded its budget of ${BUDGET_MS / 60_000} minutes; stopping it`);
    forward('SIGTERM');
    setTimeout(() => forward('SIGKILL'), 60_000).unref();
  }, BUDGET_MS);
  const disk = diskWatch();
  await runWithinDisk(jobs, env, disk.first);
  clearTimeout(budget);
  exitCode = results.every((r) => r.code === 0) ? 0 : 1;
  summary();
  disk.report();
} finally {
  cleanLeftovers();
  releaseRunLock();
}
say(`${exitCode === 0 ? 'passed' : 'FAILED'} in ${((Date.now() - started) / 1000).toFixed(0)} s${exitCode === 0 ? '' : `: ${results.filter((r) => r.code !== 0).map((r) => r.job.name).join(', ')} failed`}`);
process.exit(exitCode);

function summary() {
  const read = (file) => {
    try {
      return JSON.parse(fs.readFileSync(path.join(cache, file), 'utf8'));
    } catch {
      return undefined;
    }
  };
  const s = (ms) => (typeof ms === 'number' ? `${(ms / 1000).toFixed(1)} s` : '-');
  say('----- timings');
  const rows = [];
  for (const r of results.filter((x) => x.job.file.endsWith('server.e2e.ts'))) {
    const t = read(r.job.report) ?? {};
    rows.push([
      t.release ?? r.job.name,
      r.code === 0 ? 'passed' : `FAILED${t.failedStep ? ` at ${t.failedStep.split(' ')[0]}` : ''}`,
      s(t.quickstart?.installMs),
      s(t.freshInstall?.wallMs),
      s(t.rerun?.wallMs),
      s(t.modelChange?.wallMs),
      s(t.reset?.wallMs),
      s(t.restore?.wallMs),
      t.timings?.rootfsMs ? s(t.timings.rootfsMs) : 'cached',
      s(r.ms),
    ]);
  }
  if (rows.length > 0) {
    const head = ['suite', 'result', 'first install', 'catalog over it', 'no-op re-run', 'model change', 'reset', 'restore', 'debootstrap', 'whole'];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
    const line = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
    say(line(head));
    say(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
    for (const row of rows) say(line(row));
    for (const r of results.filter((x) => x.job.file.endsWith('server.e2e.ts'))) {
      const t = read(r.job.report);
      if (t?.quickstart?.walkthrough?.line) say(`${r.job.name}: ${t.quickstart.walkthrough.line}`);
      if (t?.freshInstall?.detail) say(`${r.job.name}: catalog deploy over the first install = our own work ${s(t.freshInstall.oursMs)} + apt/npm ${s(t.freshInstall.downloadsMs)} + install.sh ${s(t.freshInstall.bootstrapMs)}; ${t.freshInstall.detail}`);
      for (const note of t?.notes ?? []) say(`${r.job.name}: ${note}`);
    }
  }
  for (const r of results.filter((x) => !x.job.file.endsWith('server.e2e.ts'))) {
    const t = read(r.job.report) ?? {};
    const parts = Object.entries(t.timings ?? {}).map(([k, v]) => `${k} ${s(v)}`);
    say(`${r.job.name}: ${r.code === 0 ? 'passed' : `FAILED${t.failedStep ? ` at ${t.failedStep}` : ''}`} in ${s(r.ms)}${parts.length ? `; ${parts.join(', ')}` : ''}`);
    for (const note of t.notes ?? []) say(`${r.job.name}: ${note}`);
  }
  // Last, so that a CI log's tail (all that is kept of it) holds them.
  for (const r of results.filter((x) => x.code !== 0)) sayFailure(r.job.name, read(r.job.report));
}

/** A failed job's gateway journal lines (test/e2e/steps.ts failureDetail), then its first line of why. */
function sayFailure(name, report) {
  for (const line of report?.failureDetail ?? []) say(`${name}: | ${line}`);
  say(`${name}: why: ${report?.failureReason ?? 'no report (see the job\'s own log above)'}`);
}

/**
 * Free space where the containers' roots live (os.tmpdir()), sampled through the run:
 * seven booted servers fill a small CI disk, and then every job fails at the same moment
 * with errors (EIO, "disk I/O error") that do not say why.
 */
function diskWatch() {
  const where = os.tmpdir();
  const free = () => {
    try {
      const s = fs.statfsSync(where);
      return s.bavail * s.bsize;
    } catch {
      return undefined;
    }
  };
  const first = free();
  if (first === undefined) return { first, report() {} };
  say(`disk: ${gib(first)} free on ${where}'s file system at the start`);
  let lowest = { bytes: first, atMs: 0 };
  const began = Date.now();
  const timer = setInterval(() => {
    const now = free();
    if (now !== undefined && now < lowest.bytes) lowest = { bytes: now, atMs: Date.now() - began };
  }, 2_000);
  timer.unref();
  return {
    first,
    report() {
      clearInterval(timer);
      const full = lowest.bytes < 2 ** 30;
      say(`disk: lowest free space ${gib(lowest.bytes)} (${(lowest.atMs / 1000).toFixed(0)} s in), ${gib(first - lowest.bytes)} used at the peak${full ? ': the disk was full, so the containers\' writes failed (ENOSPC, EIO); free space or set E2E_PARALLEL' : ''}`);
    },
  };
}
