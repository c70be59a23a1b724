import { serializeRuntimeConfig } from '../config/runtime-config.js';
import { DeployError } from '../errors.js';
import { createHost, readOnlyHost } from '../host/index.js';
import { gatewayUnitFile } from '../steps/gateway-service.js';
import { guardCron, guardScript } from '../steps/guard.js';
import { desiredFor, readRuntimeConfig } from '../steps/runtime-config.js';
import { PRODUCTION_SITE, renderNginxSite } from '../channel/nginx.js';
import { channelDropInContent, channelEnvContent, channelSecrets } from '../steps/channel.js';
import { resolveDeploymentInputs, type AnswerFlags } from '../answers/index.js';
import type { InstallContext } from '../pipeline/step.js';

import type { RenderTarget } from './render-targets.js';

export interface RenderRequest {
  file: RenderTarget;
  answers: AnswerFlags;
  /** Render the channel files as the catalog deploy / --channel would. */
  channel?: boolean;
  showSecrets?: boolean;
  verbose?: boolean;
}

/** `service-deploy render FILE`: what the install would write, for review. Writes nothing. */
export async function runRender(request: RenderRequest): Promise<void> {
  // Writes nothing, by construction: the read-only host throws on any change.
  const host = readOnlyHost(createHost({ verbose: request.verbose }));
  const { profile, components, answers } = await resolveDeploymentInputs(host, request.answers, { needMeshAuthKey: false });
  const channel = Boolean(request.channel);

  let text: string;
  switch (request.file) {
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
        request.file === 'channel-env'
          ? channelEnvContent(secrets)
          : request.file === 'nginx'
            ? renderNginxSite({ ...PRODUCTION_SITE, knock: secrets.knock })
            : channelDropInContent();
      break;
    }
    default:
      throw new DeployError(`render: unknown file ${String(request.file)}`);
  }
  process.stdout.write(request.showSecrets ? text : host.redactor.redact(text));
}
