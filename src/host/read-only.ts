import path from 'node:path';
import type { Exec } from './exec.js';

/**
 * Check mode by construction. `readOnlyHost(host)` (host/index.ts) is the same machine seen through a
 * door that only opens for reading: every file write, removal, chmod, chown, rename,
 * link or folder, every service start, stop, reload or enable, every lock taken, every
 * download and every command not on READ_ONLY_COMMANDS throws a CheckModeViolation.
 * `--check`, `--diff`, `restore --check`, `guard --check` and `render` run on it, so a
 * branch that forgot it was in check mode fails loudly (an "Internal error", a bug)
 * instead of changing a server. The allow-lists name what may run; anything added to
 * the host later is refused until someone adds it here.
 */
export class CheckModeViolation extends Error {
  override readonly name = 'CheckModeViolation';
}

/** Commands that only read (program name -> does this argument list only read?). */
export const READ_ONLY_COMMANDS: Readonly<Record<string, (args: readonly string[]) => boolean>> = {
  'dpkg-query': () => true,
  ss: () => true,
  // preflight: the C library's version.
  getconf: (args) => args.length === 1 && args[0] === 'GNU_LIBC_VERSION',
  journalctl: () => true,
  'cloud-init': (args) => args[0] === 'status',
  node: (args) => args.length === 1 && args[0] === '--version',
  systemctl: (args) => {
    const rest = args[0] === '--user' ? args.slice(1) : args;
    return ['is-active', 'is-enabled', 'is-failed', 'is-system-running', 'show', 'status', 'cat', 'list-units'].includes(rest[0] ?? '');
  },
  tailscale: (args) => ['status', 'ip', 'version'].includes(args[0] ?? '') || (args[0] === 'serve' && args[1] === 'status'),
  // The channel firewall's checks: list the nftables ruleset, ask ufw and firewalld.
  nft: (args) => args[0] === 'list',
  ufw: (args) => args.length === 1 && args[0] === 'status',
  'firewall-cmd': (args) => args.length > 0 && args.every((a) => a === '--state' || a === '--permanent' || a === '--list-ports' || /^--query-port=\d+\/(tcp|udp)$/.test(a)),
};

export function isReadOnlyCommand(command: string, args: readonly string[]): boolean {
  const rule = READ_ONLY_COMMANDS[path.basename(command)];
  return rule !== undefined && rule(args);
}

const READS = {
  files: ['real', 'read', 'readBytes', 'stat', 'exists', 'list', 'readLink', 'tempPathFor'],
  services: ['isActive', 'isEnabled', 'mainPid', 'mainProcess', 'journalTail', 'resources'],
  locks: ['holders', 'waitFree'],
  net: ['request'],
  proc: ['environ', 'alive', 'ancestors', 'workingIn'],
  log: ['debug', 'info', 'warn', 'error', 'close', 'routeConsole'],
} as const;

function describeArgs(args: unknown[]): string {
  return args
    .filter((a) => typeof a === 'string' || typeof a === 'number')
    .map((a) => JSON.stringify(a).slice(0, 80))
    .join(', ');
}

/** `target` with only the `reads` methods callable; every other method throws. */
function readsOnly<T extends object>(target: T, what: string, reads: readonly string[]): T {
  return new Proxy(target, {
    get(t, prop) {
      const value: unknown = Reflect.get(t, prop, t);
      if (typeof value !== 'function') return value;
      if (typeof prop === 'string' && reads.includes(prop)) return (value as (...a: unknown[]) => unknown).bind(t);
      return (...args: unknown[]) => {
        throw new CheckModeViolation(`check mode: ${what}.${String(prop)}(${describeArgs(args)}) would change this server`);
      };
    },
    set(_t, prop) {
      throw new CheckModeViolation(`check mode: setting ${what}.${String(prop)}`);
    },
  });
}

function readOnlyExec(exec: Exec): Exec {
  return new Proxy(exec, {
    get(t, prop) {
      if (prop === 'which') return t.which.bind(t);
      if (prop === 'run') {
        return (command: string, args: readonly string[] = [], options?: Parameters<Exec['run']>[2]) => {
          if (!isReadOnlyCommand(command, args)) {
            return Promise.reject(new CheckModeViolation(`check mode: running ${[path.basename(command), ...args].join(' ').slice(0, 160)} is not on the read-only list`));
          }
          return t.run(command, args, options);
        };
      }
      const value: unknown = Reflect.get(t, prop, t);
      if (typeof value === 'function') throw new CheckModeViolation(`check mode: exec.${String(prop)}`);
      return value;
    },
  });
}

/** The parts of a host that change the machine, behind read-only doors (host/index.ts builds the host). */
export function readOnlyParts<P extends { files: object; exec: Exec; services: object; locks: object; net: object; proc: object; log: object }>(parts: P): P {
  return {
    ...parts,
    files: readsOnly(parts.files, 'files', READS.files),
    exec: readOnlyExec(parts.exec),
    services: readsOnly(parts.services, 'services', READS.services),
    locks: readsOnly(parts.locks, 'locks', READS.locks),
    net: readsOnly(parts.net, 'net', READS.net),
    proc: readsOnly(parts.proc, 'proc', READS.proc),
    log: readsOnly(parts.log, 'log', READS.log),
  };
}
