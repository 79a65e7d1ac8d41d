import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { findSidecar, locateSidecar, SIDECAR_PATH_ENV, sidecarFileName } from '../src/bootstrap';
import { BridgeError } from '../src/errors';
import { memoryLog } from './helpers';

// Calls without `sidecarPathEnv` read this process's environment: a developer's own override
// must not change what they find.
const saved = process.env[SIDECAR_PATH_ENV];
before(() => {
  delete process.env[SIDECAR_PATH_ENV];
});
after(() => {
  if (saved !== undefined) process.env[SIDECAR_PATH_ENV] = saved;
});

describe('findSidecar', () => {
  const files = new Set([
    '/ext/server/cursor-bridge',
    '/usr/local/bin/cursor-bridge',
    'C:\\ext\\server\\cursor-bridge.exe',
    'C:\\tools\\cursor-bridge.exe',
  ]);
  const isFile = (p: string) => files.has(p);
  it('uses the setting first, even if it is wrong (the mistake gets reported)', () => {
    assert.deepEqual(
      findSidecar({
        setting: '/nowhere/cursor-bridge',
        extensionPath: '/ext',
        development: true,
        isFile,
        platform: 'linux',
      }),
      {
        path: '/nowhere/cursor-bridge',
        source: 'setting',
      },
    );
  });
  it('then the bundled server/cursor-bridge', () => {
    assert.deepEqual(
      findSidecar({ setting: '', extensionPath: '/ext', development: false, isFile, platform: 'linux' }),
      {
        path: '/ext/server/cursor-bridge',
        source: 'bundled',
      },
    );
    assert.deepEqual(
      findSidecar({ setting: '', extensionPath: 'C:\\ext', development: false, isFile, platform: 'win32' })?.source,
      'bundled',
    );
  });
  it('searches PATH only in development', () => {
    const o = {
      setting: '',
      extensionPath: '/other',
      isFile,
      platform: 'linux' as const,
      pathEnv: '/usr/bin:/usr/local/bin',
    };
    assert.equal(findSidecar({ ...o, development: false }), undefined);
    assert.deepEqual(findSidecar({ ...o, development: true }), {
      path: '/usr/local/bin/cursor-bridge',
      source: 'PATH',
    });
    assert.deepEqual(
      findSidecar({
        setting: '',
        extensionPath: 'D:\\x',
        isFile,
        platform: 'win32',
        pathEnv: 'C:\\Windows;C:\\tools',
        development: true,
      }),
      { path: 'C:\\tools\\cursor-bridge.exe', source: 'PATH' },
    );
  });
  it('names the binary per platform', () => {
    assert.equal(sidecarFileName('win32'), 'cursor-bridge.exe');
    assert.equal(sidecarFileName('darwin'), 'cursor-bridge');
  });
});

describe('CURSOR_BRIDGE_SIDECAR_PATH', () => {
  const files = new Set(['/ext/server/cursor-bridge', '/usr/local/bin/cursor-bridge']);
  const isFile = (p: string) => files.has(p);
  const o = {
    setting: '/nowhere/cursor-bridge',
    extensionPath: '/ext',
    isFile,
    platform: 'linux' as const,
    pathEnv: '/usr/local/bin',
  };

  it('wins over the setting, the bundled binary and PATH, in development and production', () => {
    for (const development of [true, false]) {
      assert.deepEqual(findSidecar({ ...o, development, sidecarPathEnv: '/src/target/debug/cursor-bridge' }), {
        path: '/src/target/debug/cursor-bridge',
        source: 'env',
      });
    }
    assert.deepEqual(
      findSidecar({ ...o, setting: '', development: true, sidecarPathEnv: '/dev/cursor-bridge' })?.source,
      'env',
    );
  });

  it('is read from the environment by default', () => {
    process.env[SIDECAR_PATH_ENV] = '/from/env/cursor-bridge';
    try {
      assert.deepEqual(findSidecar({ ...o, development: false }), { path: '/from/env/cursor-bridge', source: 'env' });
    } finally {
      delete process.env[SIDECAR_PATH_ENV];
    }
  });

  it('is ignored when empty (or blank)', () => {
    assert.deepEqual(findSidecar({ ...o, development: false, sidecarPathEnv: '' }), {
      path: '/nowhere/cursor-bridge',
      source: 'setting',
    });
    assert.deepEqual(findSidecar({ ...o, setting: '', development: false, sidecarPathEnv: '  ' }), {
      path: '/ext/server/cursor-bridge',
      source: 'bundled',
    });
    process.env[SIDECAR_PATH_ENV] = '';
    try {
      assert.deepEqual(findSidecar({ ...o, development: false })?.source, 'setting');
    } finally {
      delete process.env[SIDECAR_PATH_ENV];
    }
  });

  it('says in the log that it was used', () => {
    const log = memoryLog();
    assert.equal(
      locateSidecar({ ...o, development: false, sidecarPathEnv: '/dev/cursor-bridge' }, log),
      '/dev/cursor-bridge',
    );
    assert.ok(
      log.lines.some((l) => l.startsWith('info: ') && l.includes(SIDECAR_PATH_ENV) && l.includes('/dev/cursor-bridge')),
      log.lines.join('\n'),
    );
    const quiet = memoryLog();
    assert.equal(locateSidecar({ ...o, development: false, sidecarPathEnv: '' }, quiet), '/nowhere/cursor-bridge');
    assert.ok(!quiet.lines.some((l) => l.includes(SIDECAR_PATH_ENV)), quiet.lines.join('\n'));
  });
});

describe('locateSidecar', () => {
  it('reports no binary at all as sidecarNotFound', () => {
    assert.throws(
      () =>
        locateSidecar(
          { setting: '', extensionPath: '/ext', development: false, isFile: () => false, sidecarPathEnv: '' },
          memoryLog(),
        ),
      (e: BridgeError) => e.kind === 'sidecarNotFound',
    );
  });
});
