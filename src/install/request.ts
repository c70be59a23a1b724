import type { AnswerFlags } from '../answers/index.js';

/** What `service-deploy install` is asked to do; the command builds it from its flags. */
export interface InstallRequest {
  answers: AnswerFlags;
  json?: boolean;
  verbose?: boolean;
  nonInteractive?: boolean;
  /** Confirms --reset-clean without a prompt. */
  yes?: boolean;
  catalog?: boolean;
  channel?: boolean;
  check?: boolean;
  diff?: boolean;
  resetClean?: boolean;
  rotateChannelSecrets?: boolean;
  /** --channel-allow: CIDR[,CIDR] or "any" (raw; parsed by the install). */
  channelAllow?: string;
  /** Seconds to wait for the apt/dpkg lock (default 300), as given: checked by the install. */
  lockTimeout?: number | string;
  /** --serial: the steps one at a time, in their listed order (default: by their needs, several at once). */
  serial?: boolean;
}

export const DEFAULT_LOCK_TIMEOUT_SECONDS = 300;
