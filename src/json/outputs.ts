import * as z from 'zod';
import { defineOutput, type JsonOutput } from './define.js';

/**
 * Every `--json` document the program prints, one `defineOutput` each (docs/json.md).
 * A new command's output is added here and to OUTPUTS below; `npm run schemas` then
 * writes its `schemas/<name>.schema.json`, and test/json/ checks both.
 */

const absolutePath = () => z.string().describe('An absolute path on this server');

// ---- install, reset, restore -------------------------------------------------------

const recap = () => z.object({ ok: z.number().int(), changed: z.number().int(), skipped: z.number().int(), failed: z.number().int() });

export const installOutput = defineOutput({
  name: 'install',
  version: 1,
  title: 'Install recap',
  printedBy: '`install --json`, `install --catalog`, `install --check --json` / `--diff --json`, and `restore ARCHIVE --json` (the install it runs)',
  shape: () => ({
    mode: z.enum(['check', 'apply']).describe('check: nothing was written (--check/--diff); apply: the run'),
    recap: recap().describe("Ansible's recap: steps ok, changed, skipped, failed"),
    durationMs: z.number().int(),
    steps: z.array(
      z.object({
        id: z.string(),
        status: z.enum(['ok', 'changed', 'skipped', 'failed']),
        durationMs: z.number().int(),
        startMs: z.number().int().min(0).optional().describe("When the step's turn began, in ms since the steps began (after the answers were resolved; a monotonic clock); absent for a skipped step"),
        endMs: z.number().int().min(0).optional().describe('When it ended, on the same clock: endMs - startMs = durationMs; absent for a skipped step'),
        reason: z.string().optional().describe('Why it was skipped'),
        changes: z.array(z.string()).optional().describe('One line per change (made, or that would be made in check mode)'),
        error: z.string().optional(),
        hint: z.string().optional(),
      }),
    ),
    channel: z
      .object({
        url: z.string().optional().describe("The endpoint URL (`channel show`'s url)"),
        pin: z.string().regex(/^sha256:[0-9a-f]{64}$/).describe("The channel certificate's pin after the run: sha256:<64 hex>"),
        pinChanged: z.boolean().describe('This run replaced the certificate (a new --channel-host or address, expiry): the portal must pin the new one, it refuses the server until then'),
        previousPin: z.string().regex(/^sha256:[0-9a-f]{64}$/).optional().describe('The pin before the run, when it changed'),
      })
      .optional()
      .describe('Present after a run (not --check) that configured the channel endpoint, once it has a certificate'),
    upgrade: z
      .object({
        from: z.string().describe('The OpenClaw version installed before'),
        to: z.string().describe('The pinned version now installed (the same as from when only Node was upgraded)'),
        node: z
          .object({ from: z.string().describe('The Node version installed before'), to: z.string().describe('The pinned Node now installed') })
          .optional()
          .describe('Present when the pinned Node changed too (the previous Node prefix is kept: rollback)'),
        backup: absolutePath().describe('The verified pre-upgrade backup'),
        seconds: z.number().describe('How long the upgrade took, backup included'),
      })
      .optional()
      .describe('Present when this run upgraded OpenClaw or Node (the previous package or Node prefix is kept: rollback)'),
  }),
});

export const upgradeFailedOutput = defineOutput({
  name: 'upgrade-failed',
  version: 1,
  title: 'Failed upgrade',
  printedBy: '`install --json` (and `install --catalog`) when an upgrade of OpenClaw or Node fails; it rolls back by itself',
  shape: () => ({
    upgrade: z.object({
      from: z.string().describe('The OpenClaw version installed before (and again, when rolledBack)'),
      to: z.string().describe('The pinned version the upgrade tried'),
      node: z
        .object({ from: z.string().describe('The Node version installed before (and again, when rolledBack)'), to: z.string().describe('The pinned Node the upgrade tried') })
        .optional()
        .describe('Present when the upgrade changed the pinned Node'),
      failedAt: z.enum(['download', 'install', 'migration', 'start', 'health']).describe('The stage that failed'),
      error: z.string().describe('What failed, secrets masked'),
      log: z.array(z.string()).describe("The gateway's last journal lines (start and health failures; otherwise empty), secrets masked"),
      backup: absolutePath().describe('The verified pre-upgrade backup'),
      rolledBack: z.boolean().describe('The previous package and state are back and the gateway answers; false: restore the backup by hand'),
      health: z.string().describe('What /healthz answered after the rollback'),
    }),
  }),
});

const skippedEntry = () => z.object({ path: z.string(), why: z.string() });

export const resetOutput = defineOutput({
  name: 'reset',
  version: 1,
  title: 'Reset (--reset-clean) result',
  printedBy: '`install --reset-clean --yes --json`',
  shape: () => ({
    backup: absolutePath().describe('The backup archive written before anything was removed'),
    entries: z.number().int(),
    skipped: z.array(skippedEntry()).describe('Left out of the backup, with why'),
    removed: z.array(absolutePath()),
    databases: z.array(z.object({ path: absolutePath(), integrity: z.string().describe('"ok", or what PRAGMA integrity_check found') })).describe('Every SQLite database in the backup, checked before anything was removed'),
    backupCopy: absolutePath().describe('The copy kept across reboots in /var/backups/service-deploy (/tmp is emptied at boot)'),
  }),
});

export const resetPlanOutput = defineOutput({
  name: 'reset-plan',
  version: 1,
  title: 'Reset (--reset-clean) plan',
  printedBy: '`install --reset-clean --check --json`',
  shape: () => ({
    mode: z.literal('check'),
    backup: z.object({ archive: absolutePath(), entries: z.number().int(), bytes: z.number().int(), items: z.array(absolutePath()), skipped: z.array(skippedEntry()), copy: absolutePath().describe('Where the copy kept across reboots would go') }),
    remove: z.array(absolutePath()),
    commands: z.array(z.string()),
  }),
});

export const restorePlanOutput = defineOutput({
  name: 'restore-plan',
  version: 1,
  title: 'Restore plan',
  printedBy: '`restore ARCHIVE --check --json` (`restore ARCHIVE --json` prints the install recap of the run)',
  shape: () => ({
    mode: z.literal('check'),
    archive: z.string(),
    entries: z.number().int(),
    bytes: z.number().int(),
    items: z.array(
      z.object({
        path: absolutePath(),
        kind: z.enum(['file', 'directory', 'symlink']),
        size: z.number().int(),
        mode: z.string().regex(/^0[0-7]{3,4}$/),
        state: z.enum(['new', 'same', 'differs']),
        why: z.string().optional(),
        target: z.string().optional(),
      }),
    ),
    createFolders: z.array(absolutePath()),
    remove: z.array(absolutePath()),
    then: z.string(),
  }),
});

// ---- backup, rollback -------------------------------------------------------------------

const checkedDatabase = () => z.object({ path: absolutePath(), integrity: z.string().describe('"ok", or what PRAGMA integrity_check found') });

export const backupOutput = defineOutput({
  name: 'backup',
  version: 1,
  title: 'Backup written',
  printedBy: '`backup --json` (`backup --keep N --json`)',
  shape: () => ({
    archive: absolutePath().describe('The archive written (0600, in /var/backups/service-deploy)'),
    entries: z.number().int(),
    bytes: z.number().int().describe('Bytes of files in it (uncompressed)'),
    databases: z.array(checkedDatabase()).describe('Every SQLite database in it, each passing PRAGMA integrity_check'),
    skipped: z.array(skippedEntry()).describe('Left out of the backup, with why'),
    stopped: z.array(z.string()).describe('The units stopped while it was written (running again after)'),
    pausedMs: z.number().int().describe('How long the gateway was stopped (0 when it was not running)'),
    pruned: z.array(absolutePath()).describe('Older backups removed by --keep'),
  }),
});

export const backupPlanOutput = defineOutput({
  name: 'backup-plan',
  version: 1,
  title: 'Backup plan',
  printedBy: '`backup --check --json` (`--keep N`)',
  shape: () => ({
    mode: z.literal('check'),
    archive: absolutePath().describe('The archive a backup now would write'),
    entries: z.number().int(),
    bytes: z.number().int(),
    skipped: z.array(skippedEntry()),
    stop: z.array(z.string()).describe('The running units a backup would stop while writing'),
    prune: z.array(absolutePath()).describe('The older backups --keep would remove'),
  }),
});

export const backupScheduleOutput = defineOutput({
  name: 'backup-schedule',
  version: 1,
  title: 'Backup schedule',
  printedBy: '`backup --every PERIOD [--keep N] [--check] --json`, `backup --every off [--check] --json`',
  shape: () => ({
    mode: z.enum(['check', 'apply']).describe('check: nothing was written (--check); apply: the run'),
    schedule: z
      .object({
        every: z.string().describe('The systemd time span between backups (24h, 7d, 90min)'),
        keep: z.number().int().describe('How many of the newest backups stay'),
        dir: absolutePath(),
        timer: z.string().describe('The system timer unit'),
      })
      .nullable()
      .describe('The schedule in effect after the run (with check: that would be); null after --every off'),
    changed: z.boolean().describe('Something was (or, with check, would be) changed'),
    changes: z.array(z.string()).describe('One line per change: unit files written or removed, the timer enabled'),
  }),
});

export const rollbackOutput = defineOutput({
  name: 'rollback',
  version: 1,
  title: 'Rollback',
  printedBy: '`rollback --yes --json`, `rollback --check --json`',
  shape: () => ({
    mode: z.enum(['check', 'apply']).describe('check: nothing was changed (--check); apply: the run'),
    from: z.string().nullable().describe('The OpenClaw version installed before the rollback (null: none is installed)'),
    to: z.string().describe('The previous version, kept by the last upgrade'),
    node: z
      .object({ from: z.string().nullable().describe('The Node version installed before the rollback (null: none runs)'), to: z.string().describe('The previous Node, kept by the last upgrade') })
      .optional()
      .describe('Present when the last upgrade changed Node (its previous prefix comes back)'),
    backup: absolutePath().describe("The pre-upgrade backup whose state comes back (what changed since is lost)"),
    health: z.string().optional().describe('What /healthz answered after the rollback (absent with check)'),
  }),
});

// ---- uninstall ------------------------------------------------------------------------

const leftEntry = () => z.object({ what: z.string().describe('A path, several paths, or "packages a b c"'), why: z.string().describe('Why it stays, and what to do about it') });

export const uninstallOutput = defineOutput({
  name: 'uninstall',
  version: 1,
  title: 'Uninstall result',
  printedBy: '`uninstall --yes --json`',
  shape: () => ({
    backup: absolutePath().optional().describe('The verified backup written before anything was removed (absent: there was no deployment data to back up)'),
    backupCopy: absolutePath().optional().describe('Its copy kept across reboots in /var/backups/service-deploy (absent with backup)'),
    removed: z.array(absolutePath()).describe('What was removed, folders whole'),
    purged: z.array(z.string()).describe('The packages the install added that were purged'),
    left: z.array(leftEntry()).describe('What stays (backups, packages the system had or that apt would remove with others), with why'),
  }),
});

export const uninstallPlanOutput = defineOutput({
  name: 'uninstall-plan',
  version: 1,
  title: 'Uninstall plan',
  printedBy: '`uninstall --check --json`',
  shape: () => ({
    mode: z.literal('check'),
    backup: z.object({ entries: z.number().int(), bytes: z.number().int() }).describe('What the backup written first would hold (entries 0: nothing to back up)'),
    remove: z.array(absolutePath()).describe('The paths present now that would be removed, folders whole'),
    purge: z.array(z.string()).describe('The packages the install added that would be purged (unless apt would remove others with them)'),
    commands: z.array(z.string()).describe('The commands it would run, in words'),
    left: z.array(leftEntry()).describe('What would stay, with why'),
  }),
});

export const renderOutput = defineOutput({
  name: 'render',
  version: 1,
  title: 'Rendered file',
  printedBy: '`render FILE --json`',
  shape: () => ({
    file: z.string().describe('The render target (runtime-config, nginx, ...)'),
    content: z.string().describe('The file as the install would write it; secrets masked unless --show-secrets'),
  }),
});

// ---- doctor, status, guard ------------------------------------------------------------

// doctor's own report is defined in src/doctor/output.ts: its fix ids come from the fixes the checks declare.

export const doctorChecksOutput = defineOutput({
  name: 'doctor-checks',
  version: 1,
  title: 'Doctor checks',
  printedBy: '`doctor --list-checks --json`',
  shape: () => ({ checks: z.array(z.object({ id: z.string(), title: z.string() })) }),
});

const componentState = () => z.object({ installed: z.string().optional().describe('Absent when not installed'), pinned: z.string(), previous: z.string().optional().describe('The version kept for a rollback (after an upgrade)') });

export const statusOutput = defineOutput({
  name: 'status',
  // 2: ok is false (exit 1) when nothing is deployed or the gateway is down; in 1 it was always true.
  version: 2,
  title: 'Deployment status',
  printedBy: '`status --json`',
  shape: () => ({
    binary: z.object({ version: z.string(), node: z.string(), arch: z.string() }).describe('This service-deploy and the Node.js it is built on (components.node is the runtime\'s)'),
    deployed: z.boolean(),
    customer: z.string().optional(),
    model: z.string().optional(),
    meshHostname: z.string().optional(),
    channel: z.boolean(),
    components: z.object({ node: componentState(), openclaw: componentState(), qmd: componentState(), 'lossless-claw': componentState() }),
    services: z.object({
      gateway: z.boolean(),
      health: z.boolean(),
      mesh: z.enum(['running', 'logged-out', 'not-installed']),
      serving: z.boolean(),
    }),
  }),
});

export const guardOutput = defineOutput({
  name: 'guard',
  version: 1,
  title: 'Guard run',
  printedBy: '`guard --json`, `guard --check --json`',
  shape: () => ({
    check: z.boolean(),
    changed: z.boolean().describe('Something was (or, with check, would be) restored'),
    restarted: z.boolean(),
    restorations: z.array(z.object({ what: z.string(), before: z.string(), after: z.string() })),
  }),
});

// ---- gateway, devices, profile -----------------------------------------------------

const healthState = () => z.object({ ok: z.boolean(), detail: z.string() });

export const gatewayStatusOutput = defineOutput({
  name: 'gateway-status',
  version: 1,
  title: 'Gateway status',
  printedBy: '`gateway status --json`',
  shape: () => ({
    unit: z.string(),
    active: z.boolean(),
    pid: z.number().int().nullable(),
    health: healthState().extend({ url: z.string() }),
    runtime: z.object({ exitCode: z.number().int().nullable(), output: z.string() }).describe("`openclaw gateway status`, secrets masked"),
  }),
});

export const gatewayRestartOutput = defineOutput({
  name: 'gateway-restart',
  version: 1,
  title: 'Gateway restart',
  printedBy: '`gateway restart --json`',
  shape: () => ({ unit: z.string(), restarted: z.boolean(), pid: z.number().int().nullable(), health: healthState() }),
});

export const gatewayLogsOutput = defineOutput({
  name: 'gateway-logs',
  version: 1,
  title: 'Gateway journal',
  printedBy: '`gateway logs --json [-n N]`',
  shape: () => ({
    unit: z.string(),
    entries: z.array(
      z.object({
        time: z.string().nullable().describe('ISO 8601, from the journal'),
        priority: z.number().int().nullable().describe('syslog priority, 0 (emerg) to 7 (debug)'),
        pid: z.number().int().nullable(),
        message: z.string().describe('Secrets masked'),
      }),
    ),
  }),
});

export const devicesListOutput = defineOutput({
  name: 'devices-list',
  version: 1,
  title: 'Device pairing requests',
  printedBy: '`devices list --json`',
  shape: () => ({
    pending: z.array(z.looseObject({}).describe("OpenClaw's own pairing request (requestId, displayName, platform, ...)")),
    paired: z.array(z.looseObject({})),
  }),
});

export const devicesApproveOutput = defineOutput({
  name: 'devices-approve',
  version: 1,
  title: 'Device approved',
  printedBy: '`devices approve ID --json`',
  shape: () => ({ approved: z.string(), output: z.string() }),
});

export const devicesRemoveOutput = defineOutput({
  name: 'devices-remove',
  version: 1,
  title: 'Paired device removed (revoked)',
  printedBy: '`devices remove DEVICE_ID --json`',
  shape: () => ({
    removed: z.string().describe('the full device id'),
    device: z.looseObject({}).describe("the device's entry as `devices list` showed it before the removal"),
  }),
});

export const profileOutput = defineOutput({
  name: 'profile',
  version: 1,
  title: 'Service profile',
  printedBy: '`profile --json`',
  shape: () => ({
    serviceName: z.string(),
    setupUrl: z.string(),
    aiGatewayUrl: z.string(),
    aiGatewayApi: z.string(),
    gatewayProviderName: z.string(),
    defaultModelId: z.string(),
    heartbeatModelId: z.string().optional().describe('The heartbeat\'s model on the same provider; absent: the chat model'),
    mcpUrl: z.string(),
    partnerApiUrl: z.string(),
    voiceProviders: z.array(z.string()).length(2),
    portalApiKeysPage: z.string(),
    portalMcpTokensPage: z.string(),
  }),
});

// ---- chat, partner ---------------------------------------------------------------------

export const chatOutput = defineOutput({
  name: 'chat',
  version: 1,
  title: 'Chat reply',
  printedBy: '`chat --json`',
  shape: () => ({ reply: z.string(), sessionId: z.string(), model: z.string() }),
});

const apiAnswer = () => z.unknown().describe("The partner API's answer as it came (null when it had no body)");

export const partnerOnboardOutput = defineOutput({
  name: 'partner-onboard',
  version: 1,
  title: 'Customer onboarded',
  printedBy: '`partner onboard --json`',
  shape: () => ({ customerId: z.string(), customer: z.looseObject({}).describe("The API's answer as it came") }),
});

export const partnerMapAgentOutput = defineOutput({
  name: 'partner-map-agent',
  version: 1,
  title: 'Agent mapped',
  printedBy: '`partner map-agent --json`',
  shape: () => ({ provider: z.string(), agentId: z.string(), customerId: z.string(), profitMultiplier: z.number(), response: apiAnswer() }),
});

export const partnerAddMemberOutput = defineOutput({
  name: 'partner-add-member',
  version: 1,
  title: 'Team member added',
  printedBy: '`partner add-member --json`',
  shape: () => ({ customerId: z.string(), email: z.string(), role: z.string(), response: apiAnswer() }),
});

export const partnerOnboardFlowOutput = defineOutput({
  name: 'partner-onboard-flow',
  version: 1,
  title: 'Onboard flow',
  printedBy: '`partner onboard-flow --json` (also when a step fails: then with what to resume)',
  shape: () => ({
    customerId: z.string().nullable().describe('null when onboarding itself failed (nothing was created)'),
    customer: z.looseObject({}).optional(),
    agentMapping: apiAnswer().optional(),
    members: z.array(z.object({ email: z.string(), role: z.string(), response: apiAnswer().optional() })).optional(),
    completedSteps: z.array(z.string()).optional().describe('On failure: the steps that were done'),
    failedStep: z.string().optional(),
    resumeCommands: z.array(z.string()).optional().describe('On failure: the commands that finish the remaining steps'),
  }),
});

// ---- channel ------------------------------------------------------------------------

export const channelShowOutput = defineOutput({
  name: 'channel-show',
  version: 1,
  title: 'Channel handoff',
  printedBy: '`channel show --json` (`--show-secrets` adds token and knock)',
  shape: () => ({
    url: z.string().describe("The endpoint, on the server's first public address (or the mesh name)"),
    urls: z.array(z.string()).describe("Every endpoint URL the certificate's names allow; loopback last"),
    certificate: z.object({
      pin: z.string().regex(/^sha256:[0-9a-f]{64}$/).describe('What `chat --pin` and the portal pin: sha256:<64 hex>'),
      sha256: z.string().regex(/^[0-9A-F]{2}(:[0-9A-F]{2}){31}$/).describe('The same fingerprint as openssl prints it (AB:CD:...)'),
      notAfter: z.string().describe('Expiry, ISO 8601'),
      names: z.array(z.string()).describe('The subject alternative names (DNS:..., IP:...)'),
    }),
    knockHeader: z.string().describe('The header the knock goes in'),
    allow: z.array(z.string()).describe('Addresses allowed to reach the port (--channel-allow); empty: any'),
    meshHostname: z.string().optional().describe('The mesh hostname, when the channel has one'),
    token: z.string().optional().describe('The bearer token: with --show-secrets only'),
    knock: z.string().optional().describe('The knock value: with --show-secrets only'),
  }),
});

// ---- the error envelope --------------------------------------------------------------

export const errorOutput = defineOutput({
  name: 'error',
  version: 1,
  title: 'Error envelope',
  printedBy: 'Any command given --json (or install --catalog) that ends before printing its own document: bad usage, refusals, failures',
  shape: () => ({}),
});

/** Every output, in the order of docs/json.md. */
export const OUTPUTS: readonly JsonOutput[] = [
  installOutput,
  upgradeFailedOutput,
  resetOutput,
  resetPlanOutput,
  restorePlanOutput,
  backupOutput,
  backupPlanOutput,
  backupScheduleOutput,
  rollbackOutput,
  uninstallOutput,
  uninstallPlanOutput,
  renderOutput,
  doctorChecksOutput,
  statusOutput,
  guardOutput,
  gatewayStatusOutput,
  gatewayRestartOutput,
  gatewayLogsOutput,
  devicesListOutput,
  devicesApproveOutput,
  devicesRemoveOutput,
  profileOutput,
  chatOutput,
  partnerOnboardOutput,
  partnerMapAgentOutput,
  partnerAddMemberOutput,
  partnerOnboardFlowOutput,
  channelShowOutput,
  errorOutput,
] as unknown as readonly JsonOutput[];
