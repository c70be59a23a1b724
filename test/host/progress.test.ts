import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { aptInstall, aptStatus } from '../../src/host/apt.js';
import { Exec, lineSplitter } from '../../src/host/exec.js';
import { createHost } from '../../src/host/index.js';
import { Logger } from '../../src/host/log.js';
import { Net } from '../../src/host/net.js';
import { MASK, Redactor } from '../../src/host/redact.js';
import { budget } from '../helpers/budget.js';
import { tempDir } from '../helpers/tmp.js';

// Progress of long work, where the host sees it: a command's output lines as they
// come, a download's bytes, apt's status lines.

const servers: http.Server[] = [];
afterAll(() => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))));

function script(dir: string, name: string, body: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

describe('Exec.run onOutputLine', () => {
  it('hands over each line of stdout and stderr while the command runs, secrets masked', async () => {
    const dir = tempDir();
    const go = path.join(dir, 'go');
    // The command waits (up to a budget) for a file the test writes only when it has seen the first line.
    const waits = script(dir, 'waits', `echo "first key=s3cr3t-value-123"\ni=0\nwhile [ ! -e ${go} ]; do i=$((i+1)); [ $i -gt ${Math.ceil(budget(20_000) / 50)} ] && exit 7; sleep 0.05; done\necho second >&2\nprintf 'third\\r\\nunfinished'`);
    const redactor = new Redactor();
    redactor.add('s3cr3t-value-123');
    const exec = new Exec(redactor, new Logger(redactor, { stderr: () => undefined }));
    const lines: string[] = [];
    const result = await exec.run(waits, [], {
      allowFailure: true,
      onOutputLine: (line) => {
        lines.push(line);
        if (line.startsWith('first')) fs.writeFileSync(go, '');
      },
    });
    expect(result.exitCode, 'the first line did not arrive while the command ran').toBe(0);
    expect(lines).toEqual([`first key=${MASK}`, 'second', 'third']);
    // The collected output is the same as without the listener.
    expect(result.stdout).toBe('first key=s3cr3t-value-123\nthird\r\nunfinished');
  });

  it('splits lines across chunks and keeps a character cut between two chunks whole', () => {
    const lines: string[] = [];
    const feed = lineSplitter((l) => lines.push(l));
    const euro = Buffer.from('€');
    feed(Buffer.concat([Buffer.from('a 5'), euro.subarray(0, 1)]));
    feed(Buffer.concat([euro.subarray(1), Buffer.from('\n\n  \nb')]));
    feed('c\rd\n');
    expect(lines).toEqual(['a 5€', 'bc', 'd']);
  });
});

describe('Net.download onProgress', () => {
  it('reports the bytes received and the total the server gave', async () => {
    const body = Buffer.alloc(300_000, 7);
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-length': String(body.length) });
      res.write(body.subarray(0, 100_000));
      setImmediate(() => res.end(body.subarray(100_000)));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const seen: Array<[number, number | undefined]> = [];
    const file = path.join(tempDir(), 'x.bin');
    await new Net().download(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x.bin`, file, { onProgress: (received, total) => seen.push([received, total]) });
    expect(seen.length).toBeGreaterThan(1);
    expect(seen.every(([, total]) => total === body.length)).toBe(true);
    expect(seen.map(([received]) => received)).toEqual([...seen.map(([received]) => received)].sort((a, b) => a - b));
    expect(seen.at(-1)![0]).toBe(body.length);
    expect(fs.statSync(file).size).toBe(body.length);
  });
});

describe('apt progress', () => {
  it("reads apt's Status-Fd lines (dlstatus, pmstatus), nothing else", () => {
    expect(aptStatus('pmstatus:nginx:42.8571:Unpacking nginx (from .../nginx_1.24.deb)')).toBe('43% Unpacking nginx (from .../nginx_1.24.deb)');
    // As `apt-get -qq -o APT::Status-Fd=1` prints it (seen from apt-get download).
    expect(aptStatus('dlstatus:1:0.0000:Retrieving file 1 of 1')).toBe('0% Retrieving file 1 of 1');
    expect(aptStatus('dlstatus:3:100.0000:Retrieving file 3 of 3')).toBe('100% Retrieving file 3 of 3');
    expect(aptStatus('Reading package lists...')).toBeUndefined();
    expect(aptStatus('pmconffile:/etc/nginx/nginx.conf:75:...')).toBeUndefined();
  });

  it('aptInstall asks apt for its status lines only when someone listens, and passes them on', async () => {
    const bin = tempDir();
    const log = path.join(bin, 'calls');
    // apt-get as apt prints its status to fd 1 (APT::Status-Fd=1); dpkg-query knows nothing.
    script(bin, 'apt-get', `echo "$*" >>${log}\ncase "$*" in *Status-Fd=1*install*) echo 'dlstatus:1:50.0000:Retrieving file 1 of 2'; echo 'pmstatus:nginx:42.8571:Unpacking nginx'; echo 'Setting up nginx';; esac`);
    script(bin, 'dpkg-query', 'exit 1');
    const host = createHost({ env: { PATH: `${bin}:/usr/bin:/bin` }, stderr: () => undefined });
    const heard: string[] = [];
    await aptInstall(host, ['nginx'], 60, (text) => heard.push(text));
    expect(heard).toEqual(['apt-get update', 'apt-get install', 'apt-get install: 50% Retrieving file 1 of 2', 'apt-get install: 43% Unpacking nginx']);
    await aptInstall(host, ['nginx'], 60);
    const calls = fs.readFileSync(log, 'utf8').trim().split('\n');
    expect(calls.slice(0, 2).every((c) => c.includes('APT::Status-Fd=1'))).toBe(true);
    expect(calls.slice(2).some((c) => c.includes('Status-Fd'))).toBe(false);
  });
});
