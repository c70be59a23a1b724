import type { CommandModule } from 'yargs';
import type { ChatOptions } from '../channel/client.js';
import { numberOption, withGlobals } from './shared.js';

/**
 * `service-deploy chat`: a signed message to the agent's channel endpoint
 * (docs/channel-protocol.md). Flags only here; the client is imported when it runs.
 */
const EPILOG = `Token and knock come from SERVICE_CHANNEL_TOKEN and SERVICE_CHANNEL_KNOCK (or
--token-file/--knock-file), never from flags; on the server itself, URL, token and
knock default to /root/.openclaw/channel.env. The URL comes from --url or
SERVICE_CHANNEL_URL. Trust the self-signed certificate with --pin (best), --ca or --insecure.
From another machine: --handoff FILE, the output of \`channel show --json --show-secrets\`
saved there (0600), gives URL, pin, token and knock at once.`;

export const chatCommand: CommandModule<object, ChatOptions> = {
  command: 'chat',
  describe: 'Send a signed chat message to a deployed agent through its channel endpoint',
  builder: (y) =>
    withGlobals(y)
      .option('message', { alias: 'm', type: 'string', describe: 'The message (- reads it from stdin)' })
      .option('session', { type: 'string', describe: 'Continue this session (the id an earlier chat printed)' })
      .option('url', { type: 'string', describe: 'Channel URL, https://<server>:18790 (default: $SERVICE_CHANNEL_URL)' })
      .option('pin', { type: 'string', describe: "Trust only this certificate: its SHA-256 fingerprint (sha256:AB:CD:...)" })
      .option('ca', { type: 'string', describe: 'Trust the certificate in this PEM file' })
      .option('insecure', { type: 'boolean', describe: 'Do not verify the certificate (prefer --pin)' })
      .option('token-file', { type: 'string', describe: 'File holding the bearer token (default: $SERVICE_CHANNEL_TOKEN)' })
      .option('knock-file', { type: 'string', describe: 'File holding the knock secret (default: $SERVICE_CHANNEL_KNOCK)' })
      .option('handoff', { type: 'string', describe: 'The portal handoff saved from `channel show --json --show-secrets` (0600): URL, pin, token and knock, to test the channel from another machine' })
      .option('timeout', numberOption('Seconds to wait for the reply, above 0 (default 300)'))
      // Declared only so that they are refused with a reason instead of "unknown argument".
      .option('token', { type: 'string', hidden: true })
      .option('knock', { type: 'string', hidden: true })
      .epilog(EPILOG) as never,
  handler: async (argv) => {
    const { runChat, processChatContext } = await import('../channel/client.js');
    await runChat(argv, await processChatContext());
  },
};
