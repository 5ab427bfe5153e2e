import { createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import yauzl from 'yauzl';

/** An export's files by name (`users.csv` ...), wherever they sit: a folder, or a .zip of it. */
export interface ExportSource {
  /** The CSV file names (without the folder the export may be wrapped in). */
  readonly files: string[];
  /** Other entries (not CSV files), reported as warnings. */
  readonly others: string[];
  open(name: string): Promise<Readable>;
  close(): void;
}

/** A problem with PATH itself (missing, not a folder or zip, a broken zip): the one-line reason. */
export class SourceError extends Error {}

/**
 * Opens PATH: a folder holding the CSV files (directly, or in the one folder it holds, as a
 * downloaded export unpacks), or a .zip of one (Study Tracker zips the export's folder:
 * `data-export-<id>/users.csv`, ...). Zip entries are read with yauzl, streamed, never unpacked.
 */
export async function openSource(target: string): Promise<ExportSource> {
  const stat = await fs.stat(target).catch(() => undefined);
  if (!stat) throw new SourceError(`${target}: no such file or folder`);
  if (stat.isDirectory()) return openFolder(target);
  if (!stat.isFile()) throw new SourceError(`${target}: not a folder or a .zip file`);
  return openZip(target);
}

async function openFolder(dir: string): Promise<ExportSource> {
  let entries = await fs.readdir(dir, { withFileTypes: true });
  const visible = (e: { name: string }) => !e.name.startsWith('.');
  if (!entries.some((e) => e.isFile() && e.name.endsWith('.csv'))) {
    const folders = entries.filter((e) => e.isDirectory() && visible(e));
    if (folders.length === 1) {
      dir = path.join(dir, folders[0].name);
      entries = await fs.readdir(dir, { withFileTypes: true });
    }
  }
  const files = entries.filter((e) => e.isFile() && e.name.endsWith('.csv')).map((e) => e.name);
  const others = entries.filter((e) => visible(e) && !(e.isFile() && e.name.endsWith('.csv'))).map((e) => e.name);
  return {
    files,
    others,
    open: async (name) => createReadStream(path.join(dir, name)),
    close: () => {},
  };
}

function openZip(file: string): Promise<ExportSource> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true, autoClose: false, strictFileNames: false }, (err, zip) => {
      if (err || !zip) return reject(new SourceError(`${file}: not a folder or a readable .zip file (${err?.message ?? 'no archive'})`));
      const entries = new Map<string, yauzl.Entry>();
      zip.on('entry', (entry: yauzl.Entry) => {
        if (!entry.fileName.endsWith('/')) entries.set(entry.fileName, entry);
        zip.readEntry();
      });
      zip.on('error', (e: Error) => reject(new SourceError(`${file}: broken .zip file (${e.message})`)));
      zip.on('end', () => {
        // Entries at the top, or all in one folder (the export's own).
        const names = [...entries.keys()];
        const prefixes = new Set(names.map((n) => (n.includes('/') ? n.slice(0, n.lastIndexOf('/') + 1) : '')));
        const prefix = prefixes.size === 1 ? [...prefixes][0] : '';
        const byName = new Map<string, yauzl.Entry>();
        const others: string[] = [];
        for (const [name, entry] of entries) {
          const short = name.startsWith(prefix) ? name.slice(prefix.length) : name;
          if (!short.includes('/') && short.endsWith('.csv')) byName.set(short, entry);
          else others.push(short);
        }
        resolve({
          files: [...byName.keys()],
          others,
          open: (name) =>
            new Promise((done, fail) => {
              zip.openReadStream(byName.get(name)!, (e, stream) => (e || !stream ? fail(new SourceError(`${name}: cannot be read from the .zip (${e?.message})`)) : done(stream)));
            }),
          close: () => zip.close(),
        });
      });
      zip.readEntry();
    });
  });
}
