/**
 * Stack traces of the minified bundles, mapped to the TypeScript sources when
 * an error is logged rather than when the bundle loads.
 *
 * Node's `--enable-source-maps` reads and decodes a bundle's source map as the
 * bundle loads: 7 to 9 ms of every cold start of the vend function on Node 24
 * (its map is about 550 KB without the sources; docs/performance.md). Here the
 * map is read the first time a stack from that file is mapped, once per
 * instance, and only an instance that logs an error pays for it. Node's own
 * `SourceMap` (node:module) decodes it, so no library lands in the bundle.
 */
import { closeSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `    at [async] [name ](file:line:column)`, or without the name and parentheses. */
const FRAME =
  /^(?<indent>\s+at (?:async )?)(?:(?<name>.+?) \()?(?<file>(?:file:\/\/)?\/[^():]+):(?<line>\d+):(?<column>\d+)\)?$/;
/** The comment esbuild ends a bundle with; only a map beside the file is read, never a data: URL. */
const MAP_COMMENT = /\/\/# sourceMappingURL=(?<url>[^\s'"]+)\s*$/;
/** How much of a file's end is read to find its map comment. */
const TAIL_BYTES = 512;

/** Each file's decoded map, or null when it has none or it cannot be read. */
const maps = new Map<string, SourceMap | null>();

function tail(path: string): string {
  const fd = openSync(path, 'r');
  try {
    const size = statSync(path).size;
    const buffer = Buffer.alloc(Math.min(TAIL_BYTES, size));
    readSync(fd, buffer, 0, buffer.length, size - buffer.length);
    return buffer.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

function mapOf(file: string): SourceMap | null {
  let map = maps.get(file);
  if (map !== undefined) return map;
  map = null;
  try {
    const path = file.startsWith('file://') ? fileURLToPath(file) : file;
    const url = MAP_COMMENT.exec(tail(path))?.groups?.url;
    if (url && !url.includes(':')) {
      map = new SourceMap(JSON.parse(readFileSync(resolve(dirname(path), url), 'utf8')));
    }
  } catch {
    // No readable map: the frame stays as it is.
  }
  maps.set(file, map);
  return map;
}

interface Origin {
  readonly fileName: string;
  readonly lineNumber: number;
  readonly columnNumber: number;
  readonly name?: string;
}

/** A source as the map names it, relative to the project: `functions/core/x.ts`. */
function sourceName(fileName: string): string {
  const path = fileName.startsWith('file://') ? fileURLToPath(fileName) : fileName;
  return path.replace(/^(?:\.\.\/)+/, '').replace(/^.*?\/(?=(?:functions|node_modules)\/)/, '');
}

/**
 * The stack with every frame of a file that has a source map pointed at the
 * source, as `--enable-source-maps` prints it: the source's line and column,
 * and the function named as its caller's source names it (the name a bundle's
 * minifier replaced). Frames without a map, and any other line, are kept.
 */
export function mapStack(stack: string): string {
  const frames = stack.split('\n').map((line) => {
    const frame = FRAME.exec(line)?.groups;
    const found = frame?.file
      ? mapOf(frame.file)?.findOrigin(Number(frame.line), Number(frame.column))
      : undefined;
    const origin = found && 'fileName' in found ? (found as Origin) : undefined;
    return { line, frame, origin };
  });
  return frames
    .map(({ line, frame, origin }, i) => {
      if (!frame || !origin) return line;
      // As Node does without the enclosing function's position: the name the
      // caller's source gives the function it calls, when the caller is in this file.
      const caller = frames[i + 1];
      const name = (caller?.frame?.file === frame.file && caller?.origin?.name) || frame.name;
      const at = `${sourceName(origin.fileName)}:${origin.lineNumber}:${origin.columnNumber}`;
      return name ? `${frame.indent}${name} (${at})` : `${frame.indent}${at}`;
    })
    .join('\n');
}
