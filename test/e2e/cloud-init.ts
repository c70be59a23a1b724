// The cloud-init catalog deploy in the e2e: the portal's user-data
// (examples/cloud-init/user-data.yaml) as a NoCloud seed, with only the setup URL and the
// <...> answers substituted, and a real apt/dpkg run holding the package locks while
// cloud-init runs the deploy (as the distro's own boot-time apt jobs do on a new server).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO } from '../helpers/binary.js';
import type { ContainerFile } from './container.js';

export const USER_DATA_EXAMPLE = path.join(REPO, 'examples', 'cloud-init', 'user-data.yaml');
/** Where the example leaves the JSON result for the portal. */
export const RESULT_FILE = '/root/service-deploy/result.json';
export const ANSWERS_FILE = '/root/service-deploy/answers.json';
/** Written by the lock holder: "<pid> <epoch s>" when it holds the locks, "<start> <end>" when it let go. */
export const HELD_MARK = '/run/e2e-lock-held';
export const RELEASED_MARK = '/run/e2e-lock-released';
/** The lock holder holds at least this long, and until the install has said it waits. */
export const MIN_HOLD_S = 30;
/** How long the holder keeps the locks after it saw the install say it waits. */
export const HOLD_AFTER_WAIT_S = 10;
const MAX_HOLD_S = 900;

export interface CloudAnswers {
  customerName: string;
  apiKey: string;
  modelId: string;
  meshAuthKey: string;
  mcpToken: string;
}

/** Replaces `from` by `to` in `text`, and fails unless `from` occurs exactly once (so the e2e never tests something else than the example). */
function replaceOnce(text: string, from: string, to: string): string {
  const parts = text.split(from);
  if (parts.length !== 2) throw new Error(`examples/cloud-init/user-data.yaml: expected "${from}" exactly once, found it ${parts.length - 1} times`);
  return parts.join(to);
}

/**
 * The example with the e2e's values: the answers (JSON strings in place of the <...>
 * placeholders) and the setup URL (the loopback one with its test CA; the stand-ins'
 * URLs come from the 0600 sources file the harness placed, as the sources of every e2e
 * install do). Nothing else changes.
 */
export function userDataForE2e(answers: CloudAnswers): string {
  let text = fs.readFileSync(USER_DATA_EXAMPLE, 'utf8');
  text = replaceOnce(text, '"<customer name>"', JSON.stringify(answers.customerName));
  text = replaceOnce(text, '"<service API key (pkt_...)>"', JSON.stringify(answers.apiKey));
  text = replaceOnce(text, '"<model id>"', JSON.stringify(answers.modelId));
  text = replaceOnce(text, '"<mesh auth key>"', JSON.stringify(answers.meshAuthKey));
  text = replaceOnce(text, '"<MCP token of this customer>"', JSON.stringify(answers.mcpToken));
  text = replaceOnce(
    text,
    'curl -fsSL https://setup.service.example/install.sh |',
    'set -a; . /root/e2e/sources.env; set +a; curl -fsSL --cacert /root/e2e/ca.pem "$SERVICE_SETUP_URL/install.sh" |',
  );
  if (/<[^>\n]*>/.test(text.replace(/^#.*$/gm, ''))) throw new Error('the e2e user-data still has a <...> placeholder');
  return text;
}

/**
 * A package whose postinst holds the locks: dpkg holds /var/lib/dpkg/lock while it runs,
 * and the apt-get that installs it holds lock-frontend. It lets go HOLD_AFTER_WAIT_S
 * seconds after the install logged that it waits, and never before MIN_HOLD_S (at most
 * MAX_HOLD_S), so the install's wait is certain and measurable however slow the machine
 * (on a loaded CI machine the deploy reached the lock after the first 30 s had passed,
 * and a hold that ended at the first sight of the message gave it a 2 s wait).
 */
export function lockHolderDeb(work: string): string {
  const stage = path.join(work, 'lock-holder-stage');
  fs.mkdirSync(path.join(stage, 'DEBIAN'), { recursive: true });
  fs.writeFileSync(
    path.join(stage, 'DEBIAN', 'control'),
    ['Package: e2e-lock-holder', 'Version: 1.0', 'Architecture: all', 'Maintainer: service-deploy e2e <e2e@invalid>', 'Description: e2e: holds the dpkg and apt locks for a while at boot', ''].join('\n'),
  );
  fs.writeFileSync(
    path.join(stage, 'DEBIAN', 'postinst'),
    `#!/bin/sh
# e2e: runs under dpkg (holding /var/lib/dpkg/lock) under apt-get (holding lock-frontend).
[ "$1" = configure ] || exit 0
start=$(date +%s)
seen=
echo "$$ $start" >${HELD_MARK}
echo "e2e lock holder: holding the package locks since $start"
while :; do
  now=$(date +%s)
  held=$(( now - start ))
  if [ -z "$seen" ] && grep -qs 'waiting for the package manager lock' /var/log/service-deploy/install.log; then seen=$now; fi
  if [ -n "$seen" ] && [ "$held" -ge ${MIN_HOLD_S} ] && [ $(( now - seen )) -ge ${HOLD_AFTER_WAIT_S} ]; then break; fi
  if [ "$held" -ge ${MAX_HOLD_S} ]; then echo "e2e lock holder: nobody waited within ${MAX_HOLD_S} s"; break; fi
  sleep 1
done
echo "$start $(date +%s)" >${RELEASED_MARK}
echo "e2e lock holder: released after $(( $(date +%s) - start )) s"
`,
    { mode: 0o755 },
  );
  const deb = path.join(work, 'e2e-lock-holder_1.0_all.deb');
  execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '--build', stage, deb], { stdio: 'pipe' });
  return deb;
}

/**
 * The files of the cloud-init container: the NoCloud seed, cloud-init's datasource and
 * network settings, and the boot-time apt run (a unit like apt-daily: a gate that starts
 * apt-get in a unit of its own and returns once the locks are held, ordered before
 * cloud-init's final stage, which runs the user-data's runcmd).
 */
export function cloudInitFiles(options: { userData: string; instanceId: string; hostname: string; lockHolderDeb: string }): ContainerFile[] {
  return [
    { path: '/var/lib/cloud/seed/nocloud/user-data', content: options.userData, mode: 0o600 },
    { path: '/var/lib/cloud/seed/nocloud/meta-data', content: `instance-id: ${options.instanceId}\nlocal-hostname: ${options.hostname}\n`, mode: 0o600 },
    // NoCloud from the seed folder only; no network configuration (the container's
    // network is the harness's), so cloud-init has nothing to warn about there.
    { path: '/etc/cloud/cloud.cfg.d/90-e2e.cfg', content: 'datasource_list: [ NoCloud, None ]\nnetwork:\n  config: disabled\n', mode: 0o644 },
    { path: '/root/e2e/e2e-lock-holder_1.0_all.deb', content: fs.readFileSync(options.lockHolderDeb), mode: 0o644 },
    {
      path: '/etc/systemd/system/e2e-boot-apt.service',
      content: `[Unit]
Description=e2e: a boot-time apt run holding the package locks (like apt-daily / unattended-upgrades)
Before=cloud-final.service
After=local-fs.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'systemd-run --unit=e2e-apt-lock --no-block --setenv=DEBIAN_FRONTEND=noninteractive apt-get install -y -q /root/e2e/e2e-lock-holder_1.0_all.deb; for i in $(seq 1 1200); do [ -e ${HELD_MARK} ] && exit 0; sleep 0.1; done; echo "apt-get did not take the locks within 120 s"; exit 1'

[Install]
WantedBy=multi-user.target
`,
      mode: 0o644,
    },
    { path: '/etc/systemd/system/multi-user.target.wants/e2e-boot-apt.service', symlink: '/etc/systemd/system/e2e-boot-apt.service' },
  ];
}
