// The Node upgrade on a real server (issue 27 item 1). Every server deployed before the
// Node 26 release runs Node 24.21.0, the previous pin. A server laid out as that release
// left it (the registry's Node 24.21.0 in /opt/service-deploy/node, OpenClaw installed
// into it by that Node's own npm, the deployment's state as it is) answers on it, and
// doctor fails its Node as below the pin; a re-run of install.sh upgrades it (verified
// backup, the new Node unpacked beside with the global packages carried over, switched,
// /healthz) and the gateway answers on the pinned Node, what was said before still
// there; `service-deploy rollback` brings 24.21.0 back, answering; a re-run upgrades
// again, which the rest of the scenario runs on.
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { NODE_VERSION, OPENCLAW_VERSION, PREVIOUS_NODE_VERSION } from './artifacts.js';
import { GATEWAY_UNIT, log, seconds, type World } from './harness.js';
import { answersMissing, healthz } from './lifecycle.js';

type Chat = (message: string) => Promise<{ reply: string }>;

const PREFIX = '/opt/service-deploy/node';
const USER_ENV = 'XDG_RUNTIME_DIR=/run/user/0';
const ARCH = process.arch === 'arm64' ? 'arm64' : 'x64';

/** The gateway's main process: its executable, and what that very binary says it is. */
export async function gatewayNode(world: World): Promise<{ exe: string; version: string }> {
  const pid = Number(await world.userUnit('MainPID'));
  expect(pid, 'the gateway has no main process').toBeGreaterThan(0);
  const exe = (await world.container.ok(`readlink /proc/${pid}/exe`)).trim();
  const version = (await world.container.ok(`/proc/${pid}/exe --version`)).trim().replace(/^v/, '');
  return { exe, version };
}

async function doctorNode(world: World): Promise<{ status: string; message: string; fix?: string }> {
  const r = await world.deploy('doctor --json node-runtime');
  const check = (r.json?.checks ?? [])[0];
  expect(check?.id, `doctor node-runtime: ${r.stdout}\n${r.stderr}`).toBe('node-runtime');
  return check;
}

async function answers(chat: Chat, what: string): Promise<string> {
  const question = `${what} ${randomBytes(4).toString('hex')}`;
  const answer = await chat(question);
  expect(answer.reply).toContain(question);
  return answer.reply;
}

/**
 * The server as the previous release left it: Node 24.21.0 from the served release
 * tarball (checked against its SHASUMS256.txt), OpenClaw installed into it by its own
 * npm, the gateway restarted on it. It answers; doctor fails its Node as below the pin.
 */
export async function serverOnPreviousNode(world: World, chat: Chat): Promise<Record<string, unknown> & { reply: string }> {
  const t = Date.now();
  const name = `node-v${PREVIOUS_NODE_VERSION}-linux-${ARCH}`;
  await world.container.ok(
    `set -e; set -a; . /root/e2e/sources.env; set +a
${USER_ENV} systemctl --user stop ${GATEWAY_UNIT} qmd-mcp.service
work="$(mktemp -d)"; cd "$work"
curl -fsS --cacert "$SERVICE_DOWNLOAD_CA_FILE" -o ${name}.tar.gz "$SERVICE_NODE_DIST_URL/v${PREVIOUS_NODE_VERSION}/${name}.tar.gz"
curl -fsS --cacert "$SERVICE_DOWNLOAD_CA_FILE" "$SERVICE_NODE_DIST_URL/v${PREVIOUS_NODE_VERSION}/SHASUMS256.txt" | grep " ${name}.tar.gz$" | sha256sum -c - >/dev/null
mkdir node; tar -xzf ${name}.tar.gz -C node --strip-components=1 --no-same-owner
PATH="$work/node/bin:$PATH" npm install --global --prefix "$work/node" --no-audit --no-fund --allow-scripts=openclaw openclaw@${OPENCLAW_VERSION} >/dev/null
rm -rf ${PREFIX}; mv node ${PREFIX}; cd /; rm -rf "$work"
${USER_ENV} systemctl --user start qmd-mcp.service ${GATEWAY_UNIT}`,
    { timeoutMs: 10 * 60_000 },
  );
  await healthz(world);
  expect(await gatewayNode(world)).toEqual({ exe: `${PREFIX}/bin/node`, version: PREVIOUS_NODE_VERSION });
  const reply = await answers(chat, `answering on Node ${PREVIOUS_NODE_VERSION}?`);
  const doctor = await doctorNode(world);
  expect(doctor).toMatchObject({ status: 'fail', message: `${PREFIX}/bin/node is Node ${PREVIOUS_NODE_VERSION}, below the pinned ${NODE_VERSION} (it lacks the fixes of the pinned release)` });
  expect(doctor.fix).toContain(`it upgrades Node to ${NODE_VERSION}`);
  const report = { wallMs: Date.now() - t, doctor: doctor.message };
  log(`the previous release's server (Node ${PREVIOUS_NODE_VERSION}, OpenClaw by its npm) answering: ${seconds(report.wallMs)}`);
  return { ...report, reply };
}

/** A re-run of install.sh upgrades Node; the gateway answers on the pinned Node, the earlier answer kept. */
async function upgraded(world: World, chat: Chat, earlierReply: string): Promise<Record<string, unknown>> {
  const run = await world.installSh('--catalog --json', {}, 20 * 60_000);
  expect(run.exitCode, `${run.stdout.slice(-3000)}\n${run.stderr.slice(-3000)}`).toBe(0);
  expect(run.json?.ok, run.stdout.slice(-3000)).toBe(true);
  expect(run.json.upgrade).toMatchObject({ node: { from: PREVIOUS_NODE_VERSION, to: NODE_VERSION } });
  expect(run.json.upgrade.backup).toMatch(/^\/var\/backups\/service-deploy\/openclaw-pre-upgrade-\d{8}-\d{6}\.tar\.gz$/);
  await healthz(world);
  expect(await gatewayNode(world)).toEqual({ exe: `${PREFIX}/bin/node`, version: NODE_VERSION });
  const status = await world.deploy('status --json');
  expect(status.json?.components?.node, status.stdout).toEqual({ installed: NODE_VERSION, pinned: NODE_VERSION, previous: PREVIOUS_NODE_VERSION });
  expect(status.json?.components?.openclaw?.installed).toBe(OPENCLAW_VERSION);
  expect((await doctorNode(world)).status).toBe('pass');
  expect(await answersMissing(world, [earlierReply]), `the answer given on Node ${PREVIOUS_NODE_VERSION}, after the upgrade`).toEqual([]);
  return { wallMs: run.wallMs, upgradeSeconds: run.json.upgrade.seconds, reply: await answers(chat, `answering on Node ${NODE_VERSION}?`) };
}

/** The upgrade, `service-deploy rollback` to the previous Node (answering), and the upgrade again. */
export async function upgradeFromPreviousNode(world: World, chat: Chat, earlierReply: string): Promise<Record<string, unknown>> {
  const first = await upgraded(world, chat, earlierReply);
  log(`upgrade Node ${PREVIOUS_NODE_VERSION} -> ${NODE_VERSION} by a re-run: ${seconds(first.wallMs as number)}`);

  const back = await world.deploy('rollback --yes --json', { timeoutMs: 10 * 60_000 });
  expect(back.exitCode, `${back.stdout}\n${back.stderr}`).toBe(0);
  expect(back.json).toMatchObject({ ok: true, mode: 'apply', node: { from: NODE_VERSION, to: PREVIOUS_NODE_VERSION } });
  await healthz(world);
  expect(await gatewayNode(world)).toEqual({ exe: `${PREFIX}/bin/node`, version: PREVIOUS_NODE_VERSION });
  const onPrevious = await answers(chat, `answering on Node ${PREVIOUS_NODE_VERSION} after the rollback?`);
  log(`rollback by hand to Node ${PREVIOUS_NODE_VERSION}: ${seconds(back.ms)}`);

  const again = await upgraded(world, chat, onPrevious);
  return { upgrade: { wallMs: first.wallMs, upgradeSeconds: first.upgradeSeconds }, rollbackMs: back.ms, upgradeAgain: { wallMs: again.wallMs, upgradeSeconds: again.upgradeSeconds } };
}
