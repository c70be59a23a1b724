import type { RenderArgs } from '../commands/render.js';
import { serializeRuntimeConfig } from '../config/runtime-config.js';
import { DeployError } from '../errors.js';
import { createHost } from '../host/index.js';
import { gatewayUnitFile } from '../steps/gateway-service.js';
import { guardCron, guardScript } from '../steps/guard.js';
import { desiredFor, readRuntimeConfig } from '../steps/runtime-config.js';
import { PRODUCTION_SITE, renderNginxSite } from '../channel/nginx.js';
import { channelDropInContent, channelEnvContent, channelSecrets } from '../steps/channel.js';
import { resolveDeploymentInputs, type AnswerFlags } from './answers.js';
import type { InstallContext } from './step.js';

/** `service-deploy render FILE`: what the install would write, for review. Writes nothing. */
export async function runRender(args: RenderArgs): Promise<void> {
  const host = createHost({ verbose: args.verbose });
  const { profile, components, answers } = await resolveDeploymentInputs(host, args as AnswerFlags, { needMeshAuthKey: false });
  const channel = Boolean(args.channel || args.catalog);

  let text: string;
  switch (args.file) {
    case 'runtime-config': {
      const { config } = await readRuntimeConfig(host);
      text = serializeRuntimeConfig(await desiredFor({ host, answers, profile, components, channel }, config));
      break;
    }
    case 'unit':
      text = gatewayUnitFile().content;
      break;
    case 'guard-script':
      text = guardScript().content;
      break;
    case 'cron':
      text = guardCron(answers.meshHostname).content;
      break;
    case 'channel-env':
    case 'nginx':
    case 'dropin': {
      // The channel secrets as the install would decide them: kept from channel.env,
      // else from the environment, else new (so --show-secrets on a fresh server shows
      // values a later install will not reuse).
      const ctx = { host, profile, components, answers, options: { channel: true, rotateChannelSecrets: false } } as unknown as InstallContext;
      const secrets = await channelSecrets(ctx);
      text =
        args.file === 'channel-env'
          ? channelEnvContent(secrets)
          : args.file === 'nginx'
            ? renderNginxSite({ ...PRODUCTION_SITE, knock: secrets.knock })
            : channelDropInContent();
      break;
    }
    default:
      throw new DeployError(`render: unknown file ${String(args.file)}`);
  }
  process.stdout.write(args.showSecrets ? text : host.redactor.redact(text));
}
