import { serializeRuntimeConfig } from '../config/runtime-config.js';
import { DeployError, UsageError } from '../errors.js';
import { createHost, readOnlyHost } from '../host/index.js';
import { gatewayUnitFile } from '../steps/gateway-service.js';
import { runtimeSecretFiles } from '../steps/runtime-secrets.js';
import { guardCron, guardScript } from '../steps/guard.js';
import { refreshScript, refreshServiceUnit, refreshTimerUnit } from '../steps/memory-index.js';
import { qmdMcpUnitFile } from '../steps/memory-service.js';
import { desiredFor, readRuntimeConfig } from '../steps/runtime-config.js';
import { PRODUCTION_SITE, renderNginxSite } from '../channel/nginx.js';
import { channelDropInContent, channelEnvContent, channelSecrets } from '../steps/channel.js';
import { firewallFiles } from '../steps/channel-firewall.js';
import { parseAllowList, type Cidr } from '../channel/allow.js';
import { resolveDeploymentInputs, type AnswerFlags } from '../answers/index.js';
import type { InstallContext } from '../pipeline/step.js';
import { emitJson, renderOutput } from '../json/index.js';

import type { RenderTarget } from './render-targets.js';

export interface RenderRequest {
  file: RenderTarget;
  answers: AnswerFlags;
  /** Render the channel files as the catalog deploy / --channel would. */
  channel?: boolean;
  showSecrets?: boolean;
  verbose?: boolean;
  /** The file inside a JSON document (docs/json.md, render). */
  json?: boolean;
  /** --channel-allow, parsed (the allow list the files would carry). */
  channelAllow?: Cidr[];
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
    case 'secrets':
    case 'secrets-env': {
      host.redactor.add(answers.apiKey, answers.mcpToken);
      text = runtimeSecretFiles(answers)[request.file === 'secrets' ? 0 : 1]!.content;
      break;
    }
    case 'guard-script':
      text = guardScript().content;
      break;
    case 'cron':
      text = guardCron(answers.meshHostname).content;
      break;
    case 'qmd-timer':
      text = refreshTimerUnit().content;
      break;
    case 'qmd-service':
      text = refreshServiceUnit().content;
      break;
    case 'qmd-script':
      text = refreshScript().content;
      break;
    case 'qmd-mcp':
      text = qmdMcpUnitFile(components).content;
      break;
    case 'channel-env':
    case 'nginx':
    case 'dropin':
    case 'firewall': {
      // The channel secrets as the install would decide them: kept from channel.env,
      // else from the environment, else new (so --show-secrets on a fresh server shows
      // values a later install will not reuse).
      const ctx = { host, profile, components, answers, options: { channel: true, rotateChannelSecrets: false, channelAllow: request.channelAllow } } as unknown as InstallContext;
      const secrets = await channelSecrets(ctx);
      text =
        request.file === 'channel-env'
          ? channelEnvContent(secrets)
          : request.file === 'nginx'
            ? renderNginxSite({ ...PRODUCTION_SITE, knock: secrets.knock, edge: secrets.edge, allow: secrets.allow })
            : request.file === 'firewall'
              ? firewallFiles(secrets.allow, (await host.exec.which('nft')) ?? '/usr/sbin/nft').rules.content
              : channelDropInContent();
      break;
    }
    default:
      throw new DeployError(`render: unknown file ${String(request.file)}`);
  }
  const content = request.showSecrets ? text : host.redactor.redact(text);
  if (request.json) emitJson(renderOutput, { ok: true, file: request.file, content });
  else process.stdout.write(content);
}

/** --channel-allow for render: parsed like the install does (exit 2 naming the flag). */
export function renderAllowList(text: string | undefined): Cidr[] | undefined {
  if (text === undefined) return undefined;
  try {
    return parseAllowList(String(text));
  } catch (error) {
    throw new UsageError(`--channel-allow: ${(error as Error).message}`, "give addresses or CIDR blocks separated by commas, or 'any'");
  }
}
