import type { CliIo } from './args.ts';

/** A step of a long operation: `done` of `total` steps finished, `step` names the current one. */
export type ProgressFn = (step: string, done: number, total: number) => void;

export interface ProgressReporter {
  report: ProgressFn;
  /** Ends the display (a TTY's bar keeps its final state; the next output starts on a new line). */
  end(): void;
}

const BAR = 24;

/**
 * Progress of `label` on stderr (stdout carries the command's JSON). On a terminal one line is
 * redrawn in place; otherwise (a log file, CI) each step is one plain line, never starting with
 * `labdata:` so that it cannot be mistaken for the one-line failure reason.
 */
export function progressReporter(label: string, stream: CliIo['stderr']): ProgressReporter {
  let last = '';
  let drawn = false;
  return {
    report(step, done, total) {
      const counter = total > 0 ? `${done}/${total}` : String(done);
      if (stream.isTTY) {
        const filled = total > 0 ? Math.round((BAR * Math.min(done, total)) / total) : 0;
        const line = `${label} [${'#'.repeat(filled)}${'.'.repeat(BAR - filled)}] ${counter} ${step}`;
        stream.write(`\r\x1b[2K${line.slice(0, (stream.columns || 80) - 1)}`);
        drawn = true;
        return;
      }
      const line = `${label} ${counter} ${step}`;
      if (line === last) return;
      last = line;
      stream.write(line + '\n');
    },
    end() {
      if (drawn) stream.write('\n');
      drawn = false;
    },
  };
}
