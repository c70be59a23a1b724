import fs from 'node:fs';
import type { Redactor } from './redact.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * Every line passes through the redactor. Lines go to an optional log file
 * (opened 0600 by the caller) and, at `info` and above or with --verbose, to stderr
 * so that stdout stays clean for --json and data output.
 */
export class Logger {
  private fd: number | undefined;
  private console: ((line: string) => boolean) | undefined;

  constructor(
    private readonly redactor: Redactor,
    private readonly options: { verbose?: boolean; quiet?: boolean; stderr?: (line: string) => void } = {},
  ) {}

  /**
   * Appends every line to `realPath` (mode 0600, created if missing). With
   * `rotateAtBytes`, a file that has reached that size first becomes `<file>.1` (the
   * previous `.1` is dropped): the file holds at most that much plus one run's lines.
   */
  attachFile(realPath: string, options: { rotateAtBytes?: number } = {}): void {
    if (options.rotateAtBytes !== undefined) {
      const info = fs.lstatSync(realPath, { throwIfNoEntry: false });
      if (info?.isFile() && info.size >= options.rotateAtBytes) fs.renameSync(realPath, `${realPath}.1`);
    }
    this.fd = fs.openSync(realPath, fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT, 0o600);
    fs.fchmodSync(this.fd, 0o600);
  }

  /**
   * While a task list runs, the lines meant for people go through its renderer (one
   * writer: the live line on a terminal stays whole, a piped line gets its timestamp).
   * A line the sink does not take (it returns false), or any with `undefined`, goes to stderr.
   */
  routeConsole(sink: ((line: string) => boolean) | undefined): void {
    this.console = sink;
  }

  close(): void {
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
  }

  debug(message: string): void {
    this.write('debug', message);
  }
  info(message: string): void {
    this.write('info', message);
  }
  warn(message: string): void {
    this.write('warn', message);
  }
  error(message: string): void {
    this.write('error', message);
  }

  private write(level: LogLevel, message: string): void {
    const text = this.redactor.redact(message);
    if (this.fd !== undefined) {
      fs.writeSync(this.fd, `${new Date().toISOString()} ${level.padEnd(5)} ${text}\n`);
    }
    const show = level === 'debug' ? this.options.verbose : !this.options.quiet || level === 'error';
    if (show && !this.console?.(text)) (this.options.stderr ?? ((line) => process.stderr.write(`${line}\n`)))(text);
  }
}
