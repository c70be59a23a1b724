import type { Answers } from '../answers/index.js';
import type { Host } from '../host/index.js';
import { LAYOUT } from '../layout.js';
import type { PipelineOutcome } from '../pipeline/runner.js';
import type { InstallOptions } from '../pipeline/step.js';
import { meshUrl } from '../steps/mesh-client.js';

/** The channel certificate's pin after a run, and whether the run changed it. */
export interface ChannelPinReport {
  pin: string;
  /** The handoff URL (`channel show`'s first). */
  url?: string;
  /** The run made a new certificate where one was: the portal's pin no longer matches. */
  changed: boolean;
  previousPin?: string;
}

/** Said after a run that re-issued the channel certificate: the portal refuses the server until it has the new pin. */
export function pinChangeLines(pin: ChannelPinReport): string[] {
  if (!pin.changed) return [];
  return [
    `CHANNEL PIN CHANGED: this run made a new channel certificate. Its pin is now ${pin.pin} (it was ${pin.previousPin}).`,
    'The portal refuses this server until it pins the new one: give it `sudo service-deploy channel show --json` (url, certificate.pin).',
  ];
}

/** Where the install's log is, and what is in it. */
export const LOG_HINT = `${LAYOUT.installLog} (every command this run ran, with its output)`;

/**
 * What a person needs once the install ran, after the recap: where the agent is
 * reachable (the mesh URL), how to pair a device, how to check health, where the logs
 * are (stdout). After a failure, what to do and where the log is (stderr, with the
 * other diagnostics). Nothing after --check or --diff (nothing was done).
 */
export async function nextSteps(host: Host, outcome: PipelineOutcome, options: InstallOptions, answers: Answers, pin?: ChannelPinReport): Promise<{ stdout: string[]; stderr: string[] }> {
  if (options.check) return { stdout: [], stderr: [] };
  const failed = outcome.results.find((r) => r.status === 'failed');
  const pinLines = pin ? pinChangeLines(pin) : [];
  if (failed) {
    return {
      stdout: [],
      stderr: [
        '',
        ...pinLines,
        `Stopped at: ${failed.title}: ${failed.error ?? 'failed'}`,
        `What to do: ${failed.hint ?? 'fix the cause above'}`,
        'Then run the same command again: it continues from there (what is already done is kept).',
        `Log: ${LOG_HINT}`,
      ],
    };
  }
  const url = await meshUrl(host).catch(() => undefined);
  const rows: Array<[string, string]> = [
    ['Agent', `${answers.customerName}, model ${answers.modelId}`],
    [
      'On the mesh',
      url
        ? `${url} (from devices in the same mesh network only)`
        : `the mesh client does not say (host name ${answers.meshHostname}): \`tailscale status\` shows why`,
    ],
    // A paired browser can read the service API key back (docs/security.md): the partner's people only.
    ['Pair a device', `open ${url ?? 'the mesh URL'} in a browser of your team (not the customer's), then here: \`sudo service-deploy devices list\` and \`sudo service-deploy devices approve <request-id>\`; once it connects, close the tab and quit the browser`],
  ];
  if (options.channel) {
    const kept = options.channelKept ? 'kept (set up by an earlier --channel or --catalog run); ' : '';
    rows.push(['Channel', `${kept}\`sudo service-deploy channel show\` prints what the portal needs (URL, certificate pin)`]);
  }
  rows.push(
    ['Health', '`sudo service-deploy doctor` (`--fix` repairs what it safely can); `sudo service-deploy status` for a summary'],
    ['Logs', `${LOG_HINT}; the agent's: \`sudo service-deploy gateway logs\``],
  );
  const width = Math.max(...rows.map(([label]) => label.length)) + 2;
  return { stdout: ['', ...rows.map(([label, text]) => `${`${label}:`.padEnd(width + 1)}${text}`), ...(pinLines.length > 0 ? ['', ...pinLines] : [])], stderr: [] };
}
