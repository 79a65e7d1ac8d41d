// Which `cursor-bridge` binary to run, and whether it can run at all. Kept apart from starting it
// because the choice is pure policy (which source wins, when PATH may be trusted) that is tested
// with fake file systems, while a bad binary is caught here with `--version` before anything waits
// on a JSON-RPC handshake it could never complete. No vscode import: the extension passes in the
// setting and its mode.

import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Logger } from './client';
import { BridgeError } from './errors';
import { platformReport } from './platform';

export const SIDECAR_NAME = 'cursor-bridge';

/**
 * A development override: a binary fresh from `cargo build` without editing (or committing) the
 * setting. It comes from the environment VS Code was started in, which no workspace can set, so it
 * is honoured in every mode and trust state.
 */
export const SIDECAR_PATH_ENV = 'CURSOR_BRIDGE_SIDECAR_PATH';

export function sidecarFileName(platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? `${SIDECAR_NAME}.exe` : SIDECAR_NAME;
}

export interface FindOptions {
  /** `cursorBridge.sidecarPath`, already `~`-expanded; empty when unset. */
  setting: string;
  extensionPath: string;
  /** Development or test mode (not Production): PATH is searched too. */
  development: boolean;
  platform?: NodeJS.Platform;
  pathEnv?: string;
  /** `CURSOR_BRIDGE_SIDECAR_PATH`'s value; by default this process's. */
  sidecarPathEnv?: string;
  isFile?: (p: string) => boolean;
}

export interface Found {
  path: string;
  source: 'env' | 'setting' | 'bundled' | 'PATH';
}

function defaultIsFile(p: string): boolean {
  try {
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * `CURSOR_BRIDGE_SIDECAR_PATH`, else the setting, else the binary bundled in the VSIX (`server/`),
 * else (development only: a released extension must not run whatever happens to be on PATH) PATH.
 * A configured path is used even if it is wrong, so the mistake is reported instead of silently
 * worked around.
 */
export function findSidecar(o: FindOptions): Found | undefined {
  const platform = o.platform ?? process.platform;
  const isFile = o.isFile ?? defaultIsFile;
  const join = platform === 'win32' ? path.win32.join : path.posix.join;
  // Blank counts as unset, as it does for the settings: `VAR= code .` is how one turns it off.
  const override = (o.sidecarPathEnv ?? process.env[SIDECAR_PATH_ENV] ?? '').trim();
  if (override) return { path: override, source: 'env' };
  if (o.setting) return { path: o.setting, source: 'setting' };
  const bundled = join(o.extensionPath, 'server', sidecarFileName(platform));
  if (isFile(bundled)) return { path: bundled, source: 'bundled' };
  if (o.development) {
    const sep = platform === 'win32' ? ';' : ':';
    for (const dir of (o.pathEnv ?? process.env.PATH ?? '').split(sep)) {
      if (!dir) continue;
      const candidate = join(dir, sidecarFileName(platform));
      if (isFile(candidate)) return { path: candidate, source: 'PATH' };
    }
  }
  return undefined;
}

/** A VSIX is a zip: make sure the bundled binary kept its executable bit. */
function ensureExecutable(file: string, log: Logger): void {
  if (process.platform === 'win32') return;
  try {
    fs.accessSync(file, fs.constants.X_OK);
  } catch {
    try {
      fs.chmodSync(file, 0o755);
    } catch (e) {
      log.warn(`cannot make ${file} executable: ${(e as Error).message}`);
    }
  }
}

/** `findSidecar`, made ready to run; throws a `sidecarNotFound` BridgeError when there is none. */
export function locateSidecar(o: FindOptions, log: Logger): string {
  const found = findSidecar(o);
  if (!found) {
    throw new BridgeError(
      'sidecarNotFound',
      `no server/${sidecarFileName()} in the extension and cursorBridge.sidecarPath is not set`,
    );
  }
  if (found.source === 'bundled') {
    ensureExecutable(found.path, log);
    // A package for another platform (or VS Code running translated) is said plainly, before a
    // binary that cannot run fails with an OS error.
    const report = platformReport(o.extensionPath);
    if (report.ok) log.debug(report.message);
    else log.warn(`${report.message} ${report.fix}`);
  }
  // An override left in a shell profile is easy to forget; say so where someone will look.
  if (found.source === 'env') log.info(`sidecar binary from ${SIDECAR_PATH_ENV}: ${found.path}`);
  else log.debug(`sidecar binary (${found.source}): ${found.path}`);
  return found.path;
}

/** Runs `<binary> --version`; resolves to the version, or fails with kind `sidecarNotFound`. */
export function checkSidecar(binary: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(binary, ['--version'], { timeout: timeoutMs, windowsHide: true }, (err, stdout) => {
      const match = /^cursor-bridge\s+(\S+)/m.exec(String(stdout));
      if (err || !match) {
        const why = err ? err.message : `unexpected --version output: ${JSON.stringify(String(stdout).slice(0, 200))}`;
        reject(new BridgeError('sidecarNotFound', `${binary} cannot be run: ${why}`));
      } else {
        resolve(match[1]);
      }
    });
  });
}
