import { ListrTaskEventType, ListrTaskState, type ListrRendererFactory, type ListrTaskObject } from 'listr2';
import { outcomeText } from './outcome.js';
import type { StepResult } from './step.js';

/**
 * listr2 renderers for the install's task list: what a person sees while the steps run,
 * on stderr (stdout stays for the recap, what to do next, and --json). listr2 runs the
 * tasks and emits their events (started, output, state, closed); these two classes
 * turn them into lines, and are the only writers of lines while the list runs (the
 * host's log lines come through `LineRelay`):
 *
 *   PlainRenderer     not a terminal (piped, cloud-init, CI; listr2's fallback renderer):
 *                     one line per step event, `2026-11-23T10:00:00Z <title>: <outcome>`,
 *                     the outcome `ok`, `changed (what)`, `skipped: why` or
 *                     `failed: why`; progress of long work as sparse lines
 *                     `<title>: ... <what>` (see PlainRenderer.progress). No colour, no
 *                     cursor movement.
 *   TerminalRenderer  a terminal (listr2's primary renderer): the same outcome lines
 *                     with a symbol (coloured unless NO_COLOR) and the time a step took,
 *                     and one live line under them for the running steps (spinner,
 *                     each one's title and seconds so far, the first one's progress).
 *
 * In both, consecutive steps skipped for the same reason share one line. --json and the
 * catalog deploy use listr2's silent renderer.
 *
 * A task's outcome is its step result (the per-task renderer option `outcome`, set by
 * the runner); a task without one is described from its listr2 state.
 */
export interface StepRendererOptions {
  /** Where the text goes (default: stderr). */
  write?: (text: string) => void;
  now?: () => Date;
  /** Terminal only: colours (default: on unless NO_COLOR is set, https://no-color.org). */
  color?: boolean;
  /** Check mode: a change is a "would change", a failure a "cannot plan". */
  check?: boolean;
  /** Lines logged while the list runs (host.log: warnings, waits), written between the step lines. */
  lines?: LineRelay;
  /** A timer (default: setTimeout, not keeping the process alive); returns its cancel. */
  schedule?: (run: () => void, ms: number) => () => void;
}

export interface StepRendererTaskOptions {
  /** The step's result, once it has one. */
  outcome?: () => StepResult | undefined;
  /**
   * When the step's turn begins. The runner starts every task at once and each waits
   * for what it needs (schedule.ts), so listr2's "started" says nothing; with a turn the
   * renderer shows the step as running from `turn.begin()` instead.
   */
  turn?: Turn;
}

/** A step's turn (StepRendererTaskOptions.turn): begun, or never reached (an earlier failure ended the run first: no line at all). */
export class Turn {
  private listener: (() => void) | undefined;
  private begun = false;
  unreached = false;

  listen(listener: () => void): void {
    this.listener = listener;
    if (this.begun) listener();
  }

  begin(): void {
    this.begun = true;
    this.listener?.();
  }
}

/** Hands lines to the renderer of the running task list; `write` says whether one took it. */
export class LineRelay {
  private sink: ((line: string) => void) | undefined;

  attach(sink: ((line: string) => void) | undefined): void {
    this.sink = sink;
  }

  write(line: string): boolean {
    this.sink?.(line);
    return this.sink !== undefined;
  }
}

/** Piped: a progress line at most this often per step, unless it crossed a quarter (25%, 50%, 75%, 100%). */
export const PROGRESS_EVERY_MS = 10_000;
/** ... and never two within this. */
export const PROGRESS_MIN_GAP_MS = 1_000;

type StepTask = ListrTaskObject<unknown, ListrRendererFactory, ListrRendererFactory>;
interface Finished {
  task: StepTask;
  result: StepResult;
}
interface SkipGroup {
  titles: string[];
  reason: string;
}

/**
 * How far a progress text says the work is, 0..1, when it says: `43%`, or `12.3 of 28.1`
 * (`12 s of 120 s`). Undefined for texts without a fraction.
 */
export function progressFraction(text: string): number | undefined {
  const percent = /(\d+(?:\.\d+)?)%/.exec(text);
  if (percent) return Math.min(1, Number(percent[1]) / 100);
  const of = /(\d+(?:\.\d+)?)(?: [a-zA-Z]+)? of (\d+(?:\.\d+)?)\b/.exec(text);
  if (of && Number(of[2]) > 0) return Math.min(1, Number(of[1]) / Number(of[2]));
  return undefined;
}

/** Which quarter (0..4) of the work a progress text says is done. */
function quarterOf(text: string): number | undefined {
  const fraction = progressFraction(text);
  return fraction === undefined ? undefined : Math.floor(fraction * 4);
}

function ownOptions(task: StepTask): StepRendererTaskOptions | undefined {
  return task.rendererTaskOptions as StepRendererTaskOptions | undefined;
}

function ownOutcome(task: StepTask): StepResult | undefined {
  return ownOptions(task)?.outcome?.();
}

/** The task's step result, or one read from its listr2 state. */
function outcomeOf(task: StepTask): StepResult {
  const own = ownOutcome(task);
  if (own) return own;
  const base = { id: task.id, title: task.initialTitle ?? task.title ?? '', changes: [], durationMs: task.message.duration ?? 0 };
  if (task.isSkipped()) return { ...base, status: 'skipped', reason: task.message.skip };
  if (task.hasFailed()) return { ...base, status: 'failed', error: task.message.error ?? 'interrupted' };
  return { ...base, status: 'ok' };
}

/** Whether a task's outcome can be told: its step result, or a final listr2 state with its message (listr2 sets the state before the message). */
function known(task: StepTask): boolean {
  if (!task.hasFinalized()) return false;
  if (ownOutcome(task)) return true;
  if (task.isSkipped()) return task.message.skip !== undefined;
  if (task.hasFailed()) return task.message.error !== undefined;
  return true;
}

function timestamp(date: Date): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z');
}

/** A message over several lines, as one. */
function oneLine(text: string): string {
  return text.trim().replace(/\s*\n\s*/g, ' | ');
}

function skipLine(group: SkipGroup): string {
  return `${group.titles.join('; ')}: skipped: ${group.reason}`;
}

/** Listens to listr2's task events; the subclasses write the lines. */
abstract class StepRenderer {
  static rendererOptions: StepRendererOptions = {};
  static rendererTaskOptions: StepRendererTaskOptions = {};

  protected readonly write: (text: string) => void;
  protected readonly now: () => Date;
  protected readonly check: boolean;
  protected readonly schedule: (run: () => void, ms: number) => () => void;
  private readonly settled = new Set<string>();
  private readonly lines: LineRelay | undefined;
  /** Skips held back until the next event shows whether the same reason follows. */
  private held: SkipGroup | undefined;

  constructor(
    private readonly tasks: readonly StepTask[],
    options: StepRendererOptions = {},
  ) {
    this.write = options.write ?? ((text: string) => void process.stderr.write(text));
    this.now = options.now ?? (() => new Date());
    this.check = options.check ?? false;
    this.schedule =
      options.schedule ??
      ((run, ms) => {
        const timer = setTimeout(run, ms);
        timer.unref();
        return () => clearTimeout(timer);
      });
    this.lines = options.lines;
  }

  render(): void {
    this.lines?.attach((line) => this.log(line));
    for (const task of this.tasks) {
      const turn = ownOptions(task)?.turn;
      turn?.listen(() => this.started(task));
      task.on(ListrTaskEventType.STATE, (state) => {
        if (state === ListrTaskState.STARTED) {
          if (!turn) this.started(task);
        } else if (known(task)) this.settle(task);
      });
      task.on(ListrTaskEventType.MESSAGE, () => {
        if (known(task)) this.settle(task);
      });
      task.on(ListrTaskEventType.OUTPUT, (text) => {
        if (typeof text === 'string' && text.trim()) this.progress(task, text.trim());
      });
      // The last event of a task that ran, after its final state and message.
      task.on(ListrTaskEventType.CLOSED, () => this.settle(task));
    }
  }

  end(): void {
    for (const task of this.tasks) this.settle(task);
    this.lines?.attach(undefined);
    this.close(this.takeSkips());
  }

  /** Says a finished task's outcome, once. */
  private settle(task: StepTask): void {
    if (this.settled.has(task.id) || !task.hasFinalized()) return;
    this.settled.add(task.id);
    if (ownOptions(task)?.turn?.unreached) return;
    const result = outcomeOf(task);
    if (result.status === 'skipped') {
      const reason = result.reason ?? '';
      if (this.held && this.held.reason !== reason) this.finished(undefined, this.takeSkips());
      this.held ??= { titles: [], reason };
      this.held.titles.push(result.title);
      this.skipped(task);
      return;
    }
    this.finished({ task, result }, this.takeSkips());
  }

  /** The held skips, said now (before any other line). */
  protected takeSkips(): SkipGroup | undefined {
    const group = this.held;
    this.held = undefined;
    return group;
  }

  protected title(task: StepTask): string {
    return task.initialTitle ?? task.title ?? '';
  }

  protected abstract started(task: StepTask): void;
  protected abstract progress(task: StepTask, text: string): void;
  /** A step's outcome (undefined: only the held skips end), after the skip group it ends. */
  protected abstract finished(done: Finished | undefined, skips: SkipGroup | undefined): void;
  /** A task was skipped (its line waits in the group). */
  protected abstract skipped(task: StepTask): void;
  protected abstract log(line: string): void;
  protected abstract close(skips: SkipGroup | undefined): void;
}

/** Not a terminal: one timestamped line per event, progress sparse. listr2's fallback renderer. */
export class PlainRenderer extends StepRenderer {
  static nonTTY = true;
  private readonly progressState = new Map<string, { at: number; quarter: number | undefined; text: string; pending?: string; cancel?: () => void }>();

  private line(text: string): void {
    this.write(`${timestamp(this.now())} ${oneLine(text)}\n`);
  }

  private skipsFirst(skips: SkipGroup | undefined): void {
    if (skips) this.line(skipLine(skips));
  }

  protected started(): void {}

  /**
   * Progress is a line `<title>: ... <text>`: the first at once; then one at most every
   * PROGRESS_EVERY_MS, or sooner (PROGRESS_MIN_GAP_MS apart) when the text's fraction
   * (`43%`, `12.3 of 28.1 MB`) reached another quarter. A text held back is written when
   * its PROGRESS_EVERY_MS is up, if the step is still at it, so a long phase never shows
   * an older one.
   */
  protected progress(task: StepTask, text: string): void {
    const at = this.now().getTime();
    const quarter = quarterOf(text);
    const last = this.progressState.get(task.id);
    const due = !last || at - last.at >= PROGRESS_EVERY_MS || (quarter !== undefined && quarter !== last.quarter && at - last.at >= PROGRESS_MIN_GAP_MS);
    if (due) {
      last?.cancel?.();
      this.progressLine(task, text, quarter);
      return;
    }
    last.pending = text === last.text ? undefined : text;
    if (last.pending === undefined) return;
    last.cancel ??= this.schedule(() => {
      last.cancel = undefined;
      if (last.pending !== undefined && !task.hasFinalized()) this.progressLine(task, last.pending, quarterOf(last.pending));
    }, last.at + PROGRESS_EVERY_MS - at);
  }

  private progressLine(task: StepTask, text: string, quarter: number | undefined): void {
    this.skipsFirst(this.takeSkips());
    this.progressState.set(task.id, { at: this.now().getTime(), quarter, text });
    this.line(`${this.title(task)}: ... ${text}`);
  }

  protected skipped(task: StepTask): void {
    this.dropProgress(task);
  }

  protected finished(done: Finished | undefined, skips: SkipGroup | undefined): void {
    this.skipsFirst(skips);
    if (!done) return;
    this.dropProgress(done.task);
    this.line(`${done.result.title}: ${outcomeText(done.result, this.check)}`);
  }

  protected log(line: string): void {
    this.skipsFirst(this.takeSkips());
    this.line(line);
  }

  protected close(skips: SkipGroup | undefined): void {
    for (const state of this.progressState.values()) state.cancel?.();
    this.progressState.clear();
    this.skipsFirst(skips);
  }

  private dropProgress(task: StepTask): void {
    this.progressState.get(task.id)?.cancel?.();
    this.progressState.delete(task.id);
  }
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const CLEAR_LINE = '\r\u001B[2K';

/** A terminal: outcome lines with symbols, and one live line for the running steps. listr2's primary renderer. */
export class TerminalRenderer extends StepRenderer {
  static nonTTY = false;
  private readonly color: boolean;
  /** The running steps, in the order they began (the live line names the first with its progress, then the others). */
  private readonly running = new Map<string, { task: StepTask; since: number; text?: string }>();
  private frame = 0;
  private timer: NodeJS.Timeout | undefined;
  private shown = false;

  constructor(tasks: readonly StepTask[], options: StepRendererOptions = {}) {
    super(tasks, options);
    this.color = options.color ?? !process.env.NO_COLOR;
  }

  private paint(code: string, text: string): string {
    return this.color ? `\u001B[${code}m${text}\u001B[0m` : text;
  }

  /** Prints finished lines above the live line, then draws the live line again. */
  private print(lines: string[]): void {
    this.write(`${this.shown ? CLEAR_LINE : ''}${lines.map((l) => `${l}\n`).join('')}`);
    this.shown = false;
    this.draw();
  }

  private draw(): void {
    if (this.running.size === 0) return;
    const now = this.now().getTime();
    const parts = [...this.running.values()].map((step, index) => {
      const seconds = Math.floor((now - step.since) / 1000);
      const text = index === 0 && step.text ? `: ${oneLine(step.text)}` : '';
      return `${this.title(step.task)}${text}${seconds >= 2 ? ` (${seconds} s)` : ''}`;
    });
    const columns = process.stderr.columns || 100;
    let text = `${SPINNER[this.frame % SPINNER.length]} ${parts.join(' · ')}`;
    if (text.length > columns - 1) text = `${text.slice(0, columns - 2)}…`;
    this.write(`${this.shown ? CLEAR_LINE : ''}${this.paint('36', text)}`);
    this.shown = true;
  }

  private skipText(group: SkipGroup): string {
    return this.paint('2', `↓ ${skipLine(group)}`);
  }

  protected started(task: StepTask): void {
    this.running.set(task.id, { task, since: this.now().getTime() });
    // The live line moves with the spinner; progress only changes its text (no redraw per byte).
    this.timer ??= setInterval(() => {
      this.frame++;
      this.draw();
    }, 100);
    this.timer.unref();
    this.draw();
  }

  protected progress(task: StepTask, text: string): void {
    const step = this.running.get(task.id);
    if (step) step.text = text;
  }

  protected skipped(task: StepTask): void {
    this.running.delete(task.id);
    if (this.shown) this.write(CLEAR_LINE);
    this.shown = false;
    this.draw();
  }

  protected finished(done: Finished | undefined, skips: SkipGroup | undefined): void {
    const lines = skips ? [this.skipText(skips)] : [];
    if (done) {
      const { result } = done;
      const step = this.running.get(done.task.id);
      const seconds = step ? (this.now().getTime() - step.since) / 1000 : 0;
      this.running.delete(done.task.id);
      const took = seconds >= 1 ? ` ${this.paint('2', `${seconds.toFixed(1)} s`)}` : '';
      const text = `${result.title}: ${outcomeText(result, this.check)}`;
      if (result.status === 'ok') lines.push(`${this.paint('32', '✔')} ${text}${took}`);
      else if (result.status === 'changed') lines.push(`${this.paint('33', '●')} ${text}${took}`);
      else lines.push(this.paint('31', `✖ ${text}`));
    }
    this.print(lines);
  }

  protected log(line: string): void {
    const skips = this.takeSkips();
    this.print([...(skips ? [this.skipText(skips)] : []), line]);
  }

  protected close(skips: SkipGroup | undefined): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.running.clear();
    this.print(skips ? [this.skipText(skips)] : []);
    if (this.shown) this.write(CLEAR_LINE);
    this.shown = false;
  }
}
