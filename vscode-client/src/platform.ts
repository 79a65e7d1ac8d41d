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
  /** Linux: the glibc this machine runs (Node's `glibcVersionRuntime`), e.g. "2.31". */
  glibcRuntime?: string;
  /** Linux: the oldest glibc the bundled sidecar starts on (server/platform.json, "2.28"). */
  glibcNeeded?: string;
}

/** Compare dotted versions ("2.28" < "2.31"); missing parts count as 0. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map((n) => Number.parseInt(n, 10) || 0);
  const pb = b.split('.').map((n) => Number.parseInt(n, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
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
  // The Linux sidecar is linked against an old glibc (xtask glibc.rs); an older one still cannot
  // load it ("version `GLIBC_2.xx' not found"), so say it before the sidecar fails to start.
  const glibc =
    f.platform === 'linux' && !f.musl && f.glibcRuntime && f.glibcNeeded
      ? { runtime: f.glibcRuntime, needed: f.glibcNeeded }
      : undefined;
  if (glibc && compareVersions(glibc.runtime, glibc.needed) < 0) {
    return {
      ok: false,
      message: `This machine has glibc ${glibc.runtime}, but the ${f.bundledTarget ?? 'bundled'} sidecar needs glibc ${glibc.needed} or newer: it cannot start here.`,
      fix: `Use a Linux with glibc ${glibc.needed} or newer (RHEL 8, Debian 10, Ubuntu 20.04 or later), or build the sidecar on this machine with \`cargo xtask dist\` and point \`cursorBridge.sidecarPath\` at it.`,
    };
  }
  const built = f.bundledTarget ? `the ${f.bundledTarget} build` : 'a sidecar from outside the package';
  const libc = glibc ? ` (glibc ${glibc.runtime}; the sidecar needs ${glibc.needed} or newer)` : '';
  return { ok: true, message: `Cursor Bridge runs ${built} on ${machine}${libc}.`, fix: '' };
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
  return platformJson(extensionPath, 'target');
}

/** Linux gnu packages: the oldest glibc their sidecar starts on (server/platform.json), if recorded. */
export function bundledGlibc(extensionPath: string): string | undefined {
  return platformJson(extensionPath, 'glibc');
}

function platformJson(extensionPath: string, key: 'target' | 'glibc'): string | undefined {
  try {
    const text = fs.readFileSync(path.join(extensionPath, 'server', 'platform.json'), 'utf8');
    const value = (JSON.parse(text) as Record<string, unknown>)[key];
    return typeof value === 'string' ? value : undefined;
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

/** Linux: the C library. glibc's version is in Node's diagnostic report header ("2.31"); musl has none. */
function libc(): { musl: boolean; glibc?: string } {
  if (process.platform !== 'linux') return { musl: false };
  try {
    const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
    const glibc = header?.glibcVersionRuntime;
    return glibc ? { musl: false, glibc } : { musl: true };
  } catch {
    return { musl: fs.existsSync('/etc/alpine-release') };
  }
}

/** The report for this VS Code and the package at `extensionPath`. */
export function platformReport(extensionPath: string): PlatformReport {
  const { musl, glibc } = libc();
  return checkPlatform({
    platform: process.platform,
    arch: process.arch,
    musl,
    translated: runsTranslated(),
    bundledTarget: bundledTarget(extensionPath),
    glibcRuntime: glibc,
    glibcNeeded: bundledGlibc(extensionPath),
  });
}
