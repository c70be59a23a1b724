import type { CommandModule } from 'yargs';
import { installCommand } from './install.js';
import { profileCommand } from './profile.js';
import { renderCommand } from './render.js';
import { restoreCommand } from './restore.js';
import { partnerCommand } from './partner.js';
import { chatCommand } from './chat.js';
import { doctorCommand, guardCommand, statusCommand } from './stubs.js';

/** The static command registry (no commandDir: it scans the disk, which a single binary does not have). */
export const commands: CommandModule<any, any>[] = [
  installCommand,
  doctorCommand,
  guardCommand,
  statusCommand,
  chatCommand,
  partnerCommand,
  profileCommand,
  renderCommand,
  restoreCommand,
];
