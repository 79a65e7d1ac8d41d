import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
  bundledGlibc,
  bundledTarget,
  checkPlatform,
  compareVersions,
  type PlatformFacts,
  vsceTarget,
} from '../src/platform';

describe('vsceTarget', () => {
  it('names the seven packages the release builds', () => {
    const cases: [NodeJS.Platform, string, boolean, string][] = [
      ['win32', 'x64', false, 'win32-x64'],
      ['win32', 'arm64', false, 'win32-arm64'],
      ['darwin', 'x64', false, 'darwin-x64'],
      ['darwin', 'arm64', false, 'darwin-arm64'],
      ['linux', 'x64', false, 'linux-x64'],
      ['linux', 'arm64', false, 'linux-arm64'],
      ['linux', 'x64', true, 'alpine-x64'],
    ];
    for (const [platform, arch, musl, target] of cases) assert.equal(vsceTarget(platform, arch, musl), target);
  });
  it('has none for a platform VS Code does not publish for', () => {
    assert.equal(vsceTarget('freebsd', 'x64'), undefined);
    assert.equal(vsceTarget('linux', 'ia32'), undefined);
  });
});

describe('checkPlatform', () => {
  const mac: PlatformFacts = {
    platform: 'darwin',
    arch: 'arm64',
    musl: false,
    translated: false,
    bundledTarget: 'darwin-arm64',
  };
  it('is content when the package matches VS Code', () => {
    const r = checkPlatform(mac);
    assert.equal(r.ok, true);
    assert.match(r.message, /darwin-arm64 build on macOS arm64/);
    assert.equal(r.fix, '');
  });
  it('says which package to install when the bundled binary is for another platform', () => {
    const r = checkPlatform({ ...mac, bundledTarget: 'linux-x64' });
    assert.equal(r.ok, false);
    assert.match(r.message, /linux-x64 build, but VS Code runs as darwin-arm64/);
    assert.match(r.fix, /cursor-bridge-darwin-arm64\.vsix/);
  });
  it('names Rosetta when an x64 VS Code is translated on Apple silicon', () => {
    const r = checkPlatform({ ...mac, arch: 'x64', translated: true, bundledTarget: 'darwin-x64' });
    assert.equal(r.ok, false);
    assert.match(r.message, /Rosetta/);
    assert.match(r.fix, /Apple silicon/);
  });
  it('names emulation on Windows on Arm', () => {
    const r = checkPlatform({
      platform: 'win32',
      arch: 'x64',
      musl: false,
      translated: true,
      bundledTarget: 'win32-x64',
    });
    assert.equal(r.ok, false);
    assert.match(r.fix, /win32-arm64/);
  });
  it('tells Alpine from glibc Linux', () => {
    const r = checkPlatform({
      platform: 'linux',
      arch: 'x64',
      musl: true,
      translated: false,
      bundledTarget: 'linux-x64',
    });
    assert.equal(r.ok, false);
    assert.match(r.message, /runs as alpine-x64/);
  });
  it('accepts a sidecar from outside the package (no recorded target)', () => {
    assert.equal(checkPlatform({ ...mac, bundledTarget: undefined }).ok, true);
  });
  it('says there is no build for an unsupported platform', () => {
    const r = checkPlatform({ platform: 'freebsd', arch: 'x64', musl: false, translated: false });
    assert.equal(r.ok, false);
    assert.match(r.fix, /cursorBridge\.sidecarPath/);
  });
});

describe('glibc on Linux', () => {
  const linux: PlatformFacts = {
    platform: 'linux',
    arch: 'x64',
    musl: false,
    translated: false,
    bundledTarget: 'linux-x64',
    glibcNeeded: '2.28',
  };
  it('says the sidecar cannot start on a glibc older than the one it needs', () => {
    const r = checkPlatform({ ...linux, glibcRuntime: '2.27' });
    assert.equal(r.ok, false);
    assert.match(r.message, /glibc 2\.27, but the linux-x64 sidecar needs glibc 2\.28 or newer/);
    assert.match(r.fix, /cargo xtask dist/);
  });
  it('names both versions when the machine has a new enough glibc', () => {
    for (const runtime of ['2.28', '2.31', '2.39', '3.0']) {
      const r = checkPlatform({ ...linux, glibcRuntime: runtime });
      assert.equal(r.ok, true, runtime);
      assert.match(r.message, new RegExp(`glibc ${runtime.replace('.', '\\.')}; the sidecar needs 2\\.28 or newer`));
    }
  });
  it('compares versions as numbers, not text', () => {
    assert.ok(compareVersions('2.9', '2.28') < 0);
    assert.ok(compareVersions('2.28', '2.28.0') === 0);
    assert.ok(compareVersions('2.31', '2.28') > 0);
  });
  it('says nothing of glibc without both versions, or on musl', () => {
    assert.doesNotMatch(checkPlatform({ ...linux, glibcRuntime: undefined }).message, /glibc/);
    assert.doesNotMatch(checkPlatform({ ...linux, glibcNeeded: undefined, glibcRuntime: '2.17' }).message, /glibc/);
  });
  it('reads the needed version from server/platform.json', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cb-glibc-'));
    try {
      assert.equal(bundledGlibc(dir), undefined);
      fs.mkdirSync(path.join(dir, 'server'));
      fs.writeFileSync(
        path.join(dir, 'server', 'platform.json'),
        '{"target": "linux-x64", "triple": "x86_64-unknown-linux-gnu", "glibc": "2.28"}',
      );
      assert.equal(bundledGlibc(dir), '2.28');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('bundledTarget', () => {
  it('reads server/platform.json, and nothing when it is missing or malformed', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cb-platform-'));
    try {
      assert.equal(bundledTarget(dir), undefined);
      fs.mkdirSync(path.join(dir, 'server'));
      fs.writeFileSync(path.join(dir, 'server', 'platform.json'), '{"target": 7}');
      assert.equal(bundledTarget(dir), undefined);
      fs.writeFileSync(
        path.join(dir, 'server', 'platform.json'),
        '{"target": "win32-arm64", "triple": "aarch64-pc-windows-msvc"}',
      );
      assert.equal(bundledTarget(dir), 'win32-arm64');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
