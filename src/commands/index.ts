import type { CommandModule } from 'yargs';
import { installCommand } from './install.js';
import { profileCommand } from './profile.js';
import { renderCommand } from './render.js';
import { restoreCommand } from './restore.js';
import { backupCommand } from './backup.js';
import { rollbackCommand } from './rollback.js';
import { partnerCommand } from './partner.js';
import { channelCommand } from './channel.js';
import { chatCommand } from './chat.js';
import { devicesCommand } from './devices.js';
import { doctorCommand } from './doctor.js';
import { gatewayCommand } from './gateway.js';
import { guardCommand } from './guard.js';
import { statusCommand } from './status.js';
import { uninstallCommand } from './uninstall.js';

/** The static command registry (no commandDir: it scans the disk, which a single binary does not have). */
export const commands: CommandModule<any, any>[] = [
  installCommand,
  doctorCommand,
  guardCommand,
  gatewayCommand,
  devicesCommand,
  statusCommand,
  chatCommand,
  channelCommand,
  partnerCommand,
  profileCommand,
  renderCommand,
  restoreCommand,
  backupCommand,
  rollbackCommand,
  uninstallCommand,
];
