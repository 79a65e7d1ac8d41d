// Does the sidecar bundled in this VSIX fit the machine VS Code runs on? A VSIX is built for one
// VS Code platform target (`vsce package --target`, see xtask `dist`, which records it in
// server/platform.json); the Marketplace normally picks the right one, but a VSIX installed by
// hand, a synced extension folder or an Intel build of VS Code on Apple silicon can leave a
// binary that cannot run, or runs translated. Check Setup and the log say so in words. No vscode
// import: the facts are gathered here and judged by a pure function that is tested with fakes.

import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface PlatformReport {
  ok: boolean;
  message: string;
  /** What to do about it; empty when nothing needs doing. */
  fix: string;
}

export interface PlatformFacts {
  /** VS Code's own (the extension host's) platform and architecture. */
  platform: NodeJS.Platform;
  arch: string;
  /** Linux: the C library is musl (Alpine). */
  musl: boolean;
  /** The host runs translated: an x64 build under Rosetta 2 on Apple silicon, or under Windows' x64 emulation on Arm. */
  translated: boolean;
  /** The VS Code target the bundled sidecar was built for (server/platform.json); undefined when unknown. */
  bundledTarget?: string;
}

/** The `vsce --target` name for a platform and architecture, if VS Code publishes one. */
export function vsceTarget(platform: NodeJS.Platform, arch: string, musl = false): string | undefined {
  const cpu = arch === 'x64' ? 'x64' : arch === 'arm64' ? 'arm64' : arch === 'arm' ? 'armhf' : undefined;
  if (!cpu) return undefined;
  if (platform === 'win32' && cpu !== 'armhf') return `win32-${cpu}`;
  if (platform === 'darwin' && cpu !== 'armhf') return `darwin-${cpu}`;
  if (platform === 'linux') return musl ? (cpu === 'armhf' ? undefined : `alpine-${cpu}`) : `linux-${cpu}`;
  return undefined;
}

/** Judge the facts: what a person should be told. */
export function checkPlatform(f: PlatformFacts): PlatformReport {
  const host = vsceTarget(f.platform, f.arch, f.musl);
  const machine = describeHost(f);
  if (!host) {
    return {
      ok: false,
      message: `Cursor Bridge has no sidecar build for ${machine}.`,
      fix: 'Build one with `cargo xtask dist` and point `cursorBridge.sidecarPath` at it.',
    };
  }
  if (f.bundledTarget && f.bundledTarget !== host) {
    return {
      ok: false,
      message: `This Cursor Bridge package is the ${f.bundledTarget} build, but VS Code runs as ${host} (${machine}): its sidecar cannot run here.`,
      fix: `Uninstall Cursor Bridge and install the ${host} package (the Marketplace picks it for you; from a file: cursor-bridge-${host}.vsix).`,
    };
  }
  if (f.translated && f.platform === 'darwin') {
    return {
      ok: false,
      message:
        'VS Code runs as an Intel (x64) app under Rosetta on Apple silicon, so Cursor Bridge uses its x64 sidecar, translated: it works, but starts and streams slower.',
      fix: 'Install the Apple silicon (or Universal) build of VS Code; Cursor Bridge then installs its darwin-arm64 package.',
    };
  }
  if (f.translated && f.platform === 'win32') {
    return {
      ok: false,
      message:
        'VS Code runs as an x64 app under emulation on a Windows Arm machine, so Cursor Bridge uses its x64 sidecar, emulated: it works, but slower.',
      fix: 'Install the Arm64 build of VS Code; Cursor Bridge then installs its win32-arm64 package.',
    };
  }
  const built = f.bundledTarget ? `the ${f.bundledTarget} build` : 'a sidecar from outside the package';
  return { ok: true, message: `Cursor Bridge runs ${built} on ${machine}.`, fix: '' };
}

function describeHost(f: PlatformFacts): string {
  const os =
    f.platform === 'darwin'
      ? 'macOS'
      : f.platform === 'win32'
        ? 'Windows'
        : f.platform === 'linux'
          ? f.musl
            ? 'Linux (musl)'
            : 'Linux'
          : f.platform;
  return `${os} ${f.arch}${f.translated ? ', translated' : ''}`;
}

/** The target recorded by `cargo xtask dist` in server/platform.json, if any. */
export function bundledTarget(extensionPath: string): string | undefined {
  try {
    const text = fs.readFileSync(path.join(extensionPath, 'server', 'platform.json'), 'utf8');
    const target = (JSON.parse(text) as { target?: unknown }).target;
    return typeof target === 'string' ? target : undefined;
  } catch {
    return undefined;
  }
}

/**
 * macOS: `sysctl.proc_translated` is 1 in a process that Rosetta translates, 0 in a native one,
 * and missing on Intel Macs. Windows: the CPU named in PROCESSOR_IDENTIFIER (set for the whole
 * system) is an Arm one while this process is x64.
 */
export function runsTranslated(platform: NodeJS.Platform = process.platform, arch: string = process.arch): boolean {
  if (platform === 'darwin' && arch === 'x64') {
    try {
      return (
        execFileSync('sysctl', ['-n', 'sysctl.proc_translated'], { encoding: 'utf8', timeout: 2000 }).trim() === '1'
      );
    } catch {
      return false; // an Intel Mac has no such name
    }
  }
  if (platform === 'win32' && arch === 'x64') {
    return /\b(ARMv8|ARM64|AArch64)\b/i.test(process.env.PROCESSOR_IDENTIFIER ?? '');
  }
  return false;
}

function isMusl(): boolean {
  if (process.platform !== 'linux') return false;
  try {
    // glibc's version is in Node's diagnostic report header; musl has none.
    const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
    return !header?.glibcVersionRuntime;
  } catch {
    return fs.existsSync('/etc/alpine-release');
  }
}

/** The report for this VS Code and the package at `extensionPath`. */
export function platformReport(extensionPath: string): PlatformReport {
  return checkPlatform({
    platform: process.platform,
    arch: process.arch,
    musl: isMusl(),
    translated: runsTranslated(),
    bundledTarget: bundledTarget(extensionPath),
  });
}
